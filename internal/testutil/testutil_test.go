package testutil

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestRandomNameIsAValidBucketNameAndFresh(t *testing.T) {
	valid := regexp.MustCompile(`^lk-[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 100 {
		n := RandomName("lk-")
		if !valid.MatchString(n) {
			t.Fatalf("RandomName = %q, want lk- and 26 of [a-z2-7]", n)
		}
		if seen[n] {
			t.Fatalf("RandomName repeated %q", n)
		}
		seen[n] = true
	}
}

// fakeTB records how a helper ended the test it was given: Fatalf and
// Skipf end the calling goroutine as testing.T's do.
type fakeTB struct {
	testing.TB
	ended string // "fatal" or "skip", "" while running
	msg   string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.ended, f.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Fatal(args ...any) {
	f.ended, f.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.ended, f.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// peerOn runs Peer on a fakeTB in its own goroutine (Fatalf and Skipf end
// it) and returns the fake and what Peer returned.
func peerOn(env, what string) (*fakeTB, string) {
	f := &fakeTB{}
	got := "(did not return)"
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = Peer(f, env, what)
	}()
	<-done
	return f, got
}

func TestPeerFailsUnderCISkipsElsewhere(t *testing.T) {
	const env = "LATCHKEY_TEST_TESTUTIL_PEER"
	for _, c := range []struct {
		ci, value      string
		ended, returns string
	}{
		{ci: "true", value: "", ended: "fatal", returns: "(did not return)"},
		{ci: "", value: "", ended: "skip", returns: "(did not return)"},
		{ci: "false", value: "", ended: "skip", returns: "(did not return)"},
		{ci: "true", value: "127.0.0.1:1", ended: "", returns: "127.0.0.1:1"},
		{ci: "", value: "127.0.0.1:1", ended: "", returns: "127.0.0.1:1"},
	} {
		t.Setenv("CI", c.ci)
		t.Setenv(env, c.value)
		f, got := peerOn(env, "a test peer (.ci/run starts one)")
		if f.ended != c.ended || got != c.returns {
			t.Errorf("CI=%q %s=%q: ended %q returning %q, want ended %q returning %q", c.ci, env, c.value, f.ended, got, c.ended, c.returns)
		}
		if c.ended != "" && (!strings.Contains(f.msg, env) || !strings.Contains(f.msg, ".ci/run starts one")) {
			t.Errorf("CI=%q: message %q does not name %s and how .ci/run provides it", c.ci, f.msg, env)
		}
	}
}

type closer struct{ closed int }

func (c *closer) Close() error { c.closed++; return nil }

func TestOpenedClosesWhenTheTestEndsAndFailsOnAnError(t *testing.T) {
	c := &closer{}
	t.Run("opened", func(t *testing.T) {
		Opened(t, c, nil)
		if c.closed != 0 {
			t.Fatal("closed before the test ended")
		}
	})
	if c.closed != 1 {
		t.Fatalf("closed %d times when the test ended, want 1", c.closed)
	}
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Opened(f, (*closer)(nil), errors.New("open: no such bucket"))
	}()
	<-done
	if f.ended != "fatal" || f.msg != "open: no such bucket" {
		t.Fatalf("on an open error: ended %q with %q, want fatal with the error", f.ended, f.msg)
	}
}
