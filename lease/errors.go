package lease

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrHeld: the lease is held by someone else. TryAcquire returns a
	// *HeldError, which matches ErrHeld.
	ErrHeld = errors.New("held by another holder")
	// ErrLostRace: another contender wrote the record between our read and
	// our write. Retrying at once is worthwhile.
	ErrLostRace = errors.New("lost a race")
	// ErrLost: the lease is no longer ours. Either its validity ran out
	// before a renew succeeded, or the record was found written by someone
	// else. Lease.Err returns it once Done is closed by a loss.
	ErrLost = errors.New("lease lost")
	// ErrReleased: the lease was released by its holder. Lease.Err returns
	// it once Done is closed by Release.
	ErrReleased = errors.New("lease released")
	// ErrCorrupt: the record at the key is not a lease record. The package
	// never overwrites it.
	ErrCorrupt = errors.New("not a lease record")
	// ErrFenced: a FencedPut carried a token older than the newest token the
	// key has accepted.
	ErrFenced = errors.New("stale fencing token")
	// ErrDeleted: the lease record was deleted by hand (the package never
	// deletes it). Inspect returns it, with store.ErrNotFound. Tokens are
	// not restarted by a deletion (see Record.Epoch).
	ErrDeleted = errors.New("the lease record was deleted")
)

// HeldError says who holds a lease and until about when a contender that
// keeps watching could take it over.
type HeldError struct {
	Key    string
	Holder string
	Token  uint64
	// Forced is true when the holder was released by force (ForceRelease)
	// and the record waits out its TTL before anyone may take it.
	Forced bool
	// Stale is true when the record looks abandoned: its last write, by
	// the writer's own wall clock, is older than StaleAfter(TTL) by ours.
	// That compares two hosts' clocks, so it is only a hint, never grounds
	// for a takeover: see Locker.ConfirmStale.
	Stale bool
	// Renewed is the record's last write time, on the writer's clock.
	Renewed time.Time
	// Until is this contender's own estimate, on its own clock, of when it
	// may take the lease over if the record stays unchanged: the time it
	// first saw the current version plus the record's TTL. The holder may
	// renew or release before then.
	Until time.Time
}

func (e *HeldError) Error() string {
	if e.Forced {
		return fmt.Sprintf("lease: %q released by force by %q (token %d); free for others about %s, once its holder has given it up",
			e.Key, e.Holder, e.Token, e.Until.Format(time.RFC3339))
	}
	if e.Stale {
		return fmt.Sprintf("lease: %q held by %q (token %d), last renewed %s ago by its clock: it looks stale; free about %s if nothing changes",
			e.Key, e.Holder, e.Token, time.Since(e.Renewed).Round(time.Second), e.Until.Format(time.RFC3339))
	}
	return fmt.Sprintf("lease: %q held by %q (token %d), expiring about %s unless renewed",
		e.Key, e.Holder, e.Token, e.Until.Format(time.RFC3339))
}

// Is makes a *HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// StaleAfter is how old (by the contender's wall clock) a record's last
// write must be before the record looks stale: its TTL plus one more TTL
// of allowance for the skew between the two hosts' wall clocks.
func StaleAfter(ttl time.Duration) time.Duration { return 2 * ttl }

// QueuedError says that a waiter has taken its place in the lease's queue
// behind others. Acquire passes it to Options.Waiting when its place is
// taken (or retaken), and returns it, when ctx ends, as the last attempt.
// It matches ErrHeld, and errors.As finds the last *HeldError seen (Held)
// through it.
type QueuedError struct {
	Key string
	// Ahead is how many waiters are ahead of this one.
	Ahead int
	// Held is the last *HeldError this waiter saw, or nil when it found
	// the lease free but others already waiting.
	Held *HeldError
}

func (e *QueuedError) Error() string {
	who := "free, but others wait for it"
	if e.Held != nil {
		who = fmt.Sprintf("held by %q (token %d)", e.Held.Holder, e.Held.Token)
	}
	return fmt.Sprintf("lease: %q %s; in the queue behind %d waiter(s)", e.Key, who, e.Ahead)
}

// Is makes a *QueuedError match ErrHeld.
func (e *QueuedError) Is(target error) bool { return target == ErrHeld }

// Unwrap returns Held (nil when there is none).
func (e *QueuedError) Unwrap() error {
	if e.Held == nil {
		return nil
	}
	return e.Held
}
