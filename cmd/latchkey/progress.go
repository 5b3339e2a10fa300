package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports a publish's objects and bytes done of total, and the
// rate, on a terminal: one line rewritten at most every progressEvery
// (bytes counted as they are read, so one large file moves it too), and
// ended with a newline when the publish ends, whether it succeeded or not,
// so that the result or the error starts a line of its own. On anything
// that is not a terminal it writes nothing.
type progress struct {
	w            io.Writer // nil: silent
	objs, total  int
	bytes, sizes int64
	cur          int64 // bytes of the current object counted by reader
	start, last  time.Time
	drawn        bool
	now          func() time.Time
}

// progressEvery is how often the line is redrawn at most.
const progressEvery = 200 * time.Millisecond

// newProgress returns a progress on stderr when it is a terminal.
func newProgress(stderr io.Writer, total int, sizes int64) *progress {
	p := &progress{total: total, sizes: sizes, now: time.Now}
	p.start = p.now()
	if isTerminal(stderr) {
		p.w = stderr
	}
	return p
}

// isTerminal reports whether w is a character device (a terminal, or
// /dev/null, where the line is harmless).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// reader returns r counting its bytes into the progress as they are read.
func (p *progress) reader(r io.Reader) io.Reader {
	if p.w == nil {
		return r
	}
	return &progressReader{r: r, p: p}
}

type progressReader struct {
	r io.Reader
	p *progress
}

func (pr *progressReader) Read(b []byte) (int, error) {
	n, err := pr.r.Read(b)
	pr.p.bytes += int64(n)
	pr.p.cur += int64(n)
	pr.p.draw(false)
	return n, err
}

// done counts one more object of n bytes (those reader counted included).
func (p *progress) done(n int64) {
	p.objs++
	p.bytes += n - p.cur
	p.cur = 0
	p.draw(p.objs == p.total)
}

// draw rewrites the line, at most every progressEvery unless force.
func (p *progress) draw(force bool) {
	if p.w == nil {
		return
	}
	now := p.now()
	if !force && now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	p.drawn = true
	fmt.Fprintf(p.w, "\r%s", p.line(now))
}

// finish ends the line, if one was drawn, after a last redraw.
func (p *progress) finish() {
	if p.w == nil || !p.drawn {
		return
	}
	fmt.Fprintf(p.w, "\r%s\n", p.line(p.now()))
	p.drawn = false
}

// line is "publish: 120/300 objects, 1.2/3.0 MiB, 4.0 MiB/s".
func (p *progress) line(now time.Time) string {
	rate := float64(p.bytes) / max(now.Sub(p.start).Seconds(), 1e-3)
	return fmt.Sprintf("publish: %d/%d objects, %.1f/%.1f MiB, %.1f MiB/s ",
		p.objs, p.total, mib(float64(p.bytes)), mib(float64(p.sizes)), mib(rate))
}

func mib(b float64) float64 { return b / (1 << 20) }
