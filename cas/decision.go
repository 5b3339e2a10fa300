package cas

import "fmt"

// Func computes the new state of a key from its current state: cur is the
// current value when exists is true, and nil when the key is absent. It
// returns a Decision (Set, Delete or Abort), or an error that stops Update
// with nothing written.
type Func func(cur []byte, exists bool) (Decision, error)

type op uint8

const (
	opSet op = iota + 1
	opDelete
	opAbort
)

// Decision is what a Func wants done with the key. The zero Decision is
// invalid; build one with Set, Delete or Abort.
type Decision struct {
	op    op
	value []byte
}

// Set asks Update to write value (nil writes an empty value).
func Set(value []byte) Decision { return Decision{op: opSet, value: value} }

// Delete asks Update to delete the key. Deleting an absent key writes
// nothing and reports Deleted.
func Delete() Decision { return Decision{op: opDelete} }

// Abort asks Update to write nothing and report Aborted: the current state
// is fine as it is.
func Abort() Decision { return Decision{op: opAbort} }

// Outcome is what Update did.
type Outcome uint8

const (
	// Written: the key now holds the value of the last Set, with
	// Result.Entry.Version as its version.
	Written Outcome = iota + 1
	// Deleted: the key was deleted, or was already absent when the
	// function asked for a delete.
	Deleted
	// Aborted: the function chose Abort; nothing was written.
	Aborted
)

func (o Outcome) String() string {
	switch o {
	case Written:
		return "written"
	case Deleted:
		return "deleted"
	case Aborted:
		return "aborted"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}
