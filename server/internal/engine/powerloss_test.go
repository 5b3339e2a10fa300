package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/powerfs"
)

// The engine runs on powerfs in a child process: bbolt reads through mmap,
// and a page fault on a FUSE mount served by the same process can stall
// the Go runtime's stop-the-world for good.

// powerLogBytes keeps the log files small: powerfs copies what is synced.
const powerLogBytes = 64 << 10

const (
	powerMmapEnv = "LATCHKEY_ENGINE_TEST_MMAP" // Options.mmapSize of the child
	powerKeysEnv = "LATCHKEY_ENGINE_TEST_KEYS" // how many keys it writes
)

// childPowerWriter opens dir and writes keys k0, k1, ..., printing "ack K"
// after each Update returns, then "done" and waits to be killed.
func childPowerWriter(dir string) {
	o := &Options{LogBytes: powerLogBytes}
	if n, err := strconv.ParseInt(os.Getenv(powerMmapEnv), 10, 64); err == nil {
		o.mmapSize = n
	}
	e, err := Open(dir, o)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("mode", e.Mode())
	n, _ := strconv.Atoi(os.Getenv(powerKeysEnv))
	for i := range n {
		k := fmt.Sprintf("k%d", i)
		if _, err := e.Update(context.Background(), func(tx *Tx) error {
			tx.PutRecord(Record{Key: k, Data: []byte("v")})
			return nil
		}); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("ack", k)
	}
	fmt.Println("done")
	select {}
}

// powerWrite runs the writer child on dir (on p) until it is done or the
// power is cut, and returns the keys acknowledged before the cut.
func powerWrite(t *testing.T, p *powerfs.FS, dir string, keys int, mmap int64) (acked []string) {
	t.Helper()
	cmd := child(t, "powerwriter", dir)
	cmd.Env = append(cmd.Env, powerKeysEnv+"="+strconv.Itoa(keys), powerMmapEnv+"="+strconv.FormatInt(mmap, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		cut := p.IsCut() // read after the line arrived
		switch {
		case strings.HasPrefix(line, "ack ") && !cut:
			acked = append(acked, strings.TrimPrefix(line, "ack "))
		case strings.HasPrefix(line, "error:") && !cut:
			t.Fatalf("writer: %s", line)
		case line == "done":
			return acked
		}
		if cut {
			return acked
		}
	}
	return acked
}

// powerCheck cuts the power, materializes the image and checks that dir
// (relative to the mount) opens with every acked key.
func powerCheck(t *testing.T, p *powerfs.FS, rel string, opts *Options, acked []string, what string) {
	t.Helper()
	p.Cut()
	p.Unmount()
	out := filepath.Join(t.TempDir(), "image")
	if err := p.Materialize(out); err != nil {
		t.Fatal(err)
	}
	e, err := Open(filepath.Join(out, rel), opts)
	if err != nil {
		t.Fatalf("%s: the data directory does not open after the cut: %v", what, err)
	}
	defer e.Close()
	if err := e.View(func(tx *Tx) error {
		for _, k := range acked {
			if _, ok := getRec(tx, k); !ok {
				t.Errorf("%s: %s was acknowledged before the power cut and is gone", what, k)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A database reopened past the log's threshold runs on bbolt's own
// fsyncs: every write acknowledged before a power cut survives it (issue
// 23 item 6; before, the reopened engine acknowledged with no fsync and a
// cut lost them all).
func TestPowerLossReopenPastLogThreshold(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{mmapSize: 1 << 20, LogBytes: powerLogBytes}
	fillPastLog(t, dir, opts)
	p := powerfs.Mount(t, dir, powerfs.Options{Model: powerfs.Strict})
	acked := powerWrite(t, p, p.Dir(), 5, opts.mmapSize)
	if len(acked) != 5 {
		t.Fatalf("acked %v", acked)
	}
	powerCheck(t, p, "", opts, acked, "reopened past the threshold")
}

// A fresh data directory, with parents Open creates: every write
// acknowledged before a cut after any sync survives (issue 23 item 7: the
// data directory and its parents were never synced, so a cut lost
// latchkey.db, wal/ and everything acknowledged).
func TestPowerLossFreshDataDir(t *testing.T) {
	rel := filepath.Join("var", "lib", "latchkey")
	p := powerfs.Mount(t, "", powerfs.Options{Model: powerfs.Strict})
	opts := &Options{LogBytes: powerLogBytes}
	powerCheck(t, p, rel, opts, powerWrite(t, p, filepath.Join(p.Dir(), rel), 4, 0), "no cut")
	total := p.Syncs()
	start := time.Now()
	for k := 1; k <= total; k++ {
		p := powerfs.Mount(t, "", powerfs.Options{Model: powerfs.Strict, CutAfter: k})
		acked := powerWrite(t, p, filepath.Join(p.Dir(), rel), 4, 0)
		powerCheck(t, p, rel, opts, acked, fmt.Sprintf("cut after sync %d of %d", k, total))
	}
	t.Logf("%d crash points in %v", total, time.Since(start))
}
