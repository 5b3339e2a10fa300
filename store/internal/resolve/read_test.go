package resolve

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
)

// TestReadRetry: a read is sent again while it fails retryably, at most
// Attempts times, with the policy's delays between sends, and not past a
// refusal or the context's end; the last error is returned.
func TestReadRetry(t *testing.T) {
	errAgain, errFinal := errors.New("503"), errors.New("403")
	p := ReadRetry{Attempts: 3, Backoff: backoff.Policy{Base: 100 * time.Millisecond, Max: 150 * time.Millisecond},
		Retryable: func(err error) bool { return err == errAgain }}
	for _, c := range []struct {
		name  string
		fails []error // what successive sends return; then success
		want  error
		sends int
	}{
		{name: "first send answers", sends: 1},
		{name: "answers on the third send", fails: []error{errAgain, errAgain}, sends: 3},
		{name: "gives up after Attempts", fails: []error{errAgain, errAgain, errAgain, errAgain}, want: errAgain, sends: 3},
		{name: "a refused error is not resent", fails: []error{errAgain, errFinal}, want: errFinal, sends: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sends := 0
				start := time.Now()
				err := p.Do(t.Context(), func() error {
					sends++
					if sends <= len(c.fails) {
						return c.fails[sends-1]
					}
					return nil
				})
				if err != c.want || sends != c.sends {
					t.Fatalf("Do = %v after %d sends, want %v after %d", err, sends, c.want, c.sends)
				}
				// Delay n is below Base·2^(n-1), capped at Max.
				if d := time.Since(start); d >= 250*time.Millisecond {
					t.Fatalf("%d sends took %v, over the policy's ceilings", sends, d)
				}
			})
		})
	}
}

// TestReadRetryContextEnds: a read is not sent again once ctx has ended,
// during a send or during the delay, and its own error is returned.
func TestReadRetryContextEnds(t *testing.T) {
	errAgain := errors.New("503")
	p := ReadRetry{Attempts: 10, Backoff: backoff.Policy{Base: time.Hour, Max: time.Hour},
		Retryable: func(error) bool { return true }}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		sends := 0
		err := p.Do(ctx, func() error { sends++; cancel(); return errAgain })
		if err != errAgain || sends != 1 {
			t.Fatalf("cancelled during the send: Do = %v after %d sends, want %v after 1", err, sends, errAgain)
		}
		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		sends = 0
		start := time.Now()
		err = p.Do(ctx, func() error { sends++; return errAgain })
		if err != errAgain || sends != 1 || time.Since(start) != time.Second {
			t.Fatalf("deadline during the delay: Do = %v after %d sends and %v, want %v after 1 at the deadline", err, sends, time.Since(start), errAgain)
		}
	})
}
