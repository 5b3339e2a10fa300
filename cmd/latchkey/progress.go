package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports a publish's objects and bytes done of total on a
// terminal, at most a few times a second, on one rewritten line. On
// anything that is not a terminal it writes nothing.
type progress struct {
	w            io.Writer // nil: silent
	objs, total  int
	bytes, sizes int64
	start, last  time.Time
}

// newProgress returns a progress on stderr when it is a terminal.
func newProgress(stderr io.Writer, total int, sizes int64) *progress {
	p := &progress{total: total, sizes: sizes, start: time.Now()}
	if isTerminal(stderr) {
		p.w = stderr
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// done counts one more object of n bytes.
func (p *progress) done(n int64) {
	p.objs++
	p.bytes += n
	if p.w == nil {
		return
	}
	now := time.Now()
	if p.objs < p.total && now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, "\r%s", p.line(now))
	if p.objs == p.total {
		fmt.Fprintln(p.w)
	}
}

// line is "publish: 120/300 objects, 1.2/3.0 MiB, 4.0 MiB/s".
func (p *progress) line(now time.Time) string {
	rate := float64(p.bytes) / max(now.Sub(p.start).Seconds(), 1e-3)
	return fmt.Sprintf("publish: %d/%d objects, %.1f/%.1f MiB, %.1f MiB/s ",
		p.objs, p.total, mib(float64(p.bytes)), mib(float64(p.sizes)), mib(rate))
}

func mib(b float64) float64 { return b / (1 << 20) }
