package store

import "fmt"

type condKind uint8

const (
	condNone condKind = iota
	condAbsent
	condMatch
)

// Condition is the precondition of a write. The zero value is Unconditional.
type Condition struct {
	kind    condKind
	version Version
}

var (
	// Unconditional writes whatever the key's state.
	Unconditional = Condition{}
	// IfAbsent writes only if the key does not exist.
	IfAbsent = Condition{kind: condAbsent}
)

// IfMatch writes only if the key exists with version v. IfMatch("") is a
// condition no stored key satisfies.
func IfMatch(v Version) Condition { return Condition{kind: condMatch, version: v} }

// IsUnconditional reports whether c is Unconditional.
func (c Condition) IsUnconditional() bool { return c.kind == condNone }

// IsAbsent reports whether c is IfAbsent.
func (c Condition) IsAbsent() bool { return c.kind == condAbsent }

// Match returns the version c requires and true when c is IfMatch.
func (c Condition) Match() (Version, bool) { return c.version, c.kind == condMatch }

// Holds reports whether c holds for a key whose current state is
// (exists, current). Backends that check conditions themselves under a lock
// use it so that every such backend checks them the same way.
func (c Condition) Holds(exists bool, current Version) bool {
	switch c.kind {
	case condAbsent:
		return !exists
	case condMatch:
		return exists && c.version != "" && current == c.version
	default:
		return true
	}
}

func (c Condition) String() string {
	switch c.kind {
	case condAbsent:
		return "if-absent"
	case condMatch:
		return fmt.Sprintf("if-match %q", string(c.version))
	default:
		return "unconditional"
	}
}
