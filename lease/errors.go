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
)

// HeldError says who holds a lease and until about when a contender that
// keeps watching could take it over.
type HeldError struct {
	Key    string
	Holder string
	Token  uint64
	// Until is this contender's own estimate, on its own clock, of when it
	// may take the lease over if the record stays unchanged: the time it
	// first saw the current version plus the record's TTL. The holder may
	// renew or release before then.
	Until time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease: %q held by %q (token %d), expiring about %s unless renewed",
		e.Key, e.Holder, e.Token, e.Until.Format(time.RFC3339))
}

// Is makes a *HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }
