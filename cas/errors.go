package cas

import (
	"errors"
	"fmt"
)

// ErrContended matches (errors.Is) the error Update returns when it gives
// up on a key because other writers kept winning the race: the attempts
// ran out, or the Timeout passed. The error is a *ContendedError.
var ErrContended = errors.New("too contended")

// ContendedError says that Update gave up on Key after Attempts attempts
// lost the race to other writers. Nothing of this Update was written:
// Update never returns it once one of its writes had an unknown outcome.
type ContendedError struct {
	Key      string
	Attempts int
	// Deadline is true when Options.Timeout ended the update rather than
	// Options.MaxAttempts.
	Deadline bool
}

func (e *ContendedError) Error() string {
	why := ""
	if e.Deadline {
		why = " (timeout)"
	}
	return fmt.Sprintf("cas: update %q: %v after %d attempts%s", e.Key, ErrContended, e.Attempts, why)
}

// Is makes errors.Is(err, ErrContended) true.
func (e *ContendedError) Is(target error) bool { return target == ErrContended }
