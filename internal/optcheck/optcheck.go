// Package optcheck checks the numeric fields of an Options struct the one
// way CONTRIBUTING.md states for every function that takes options: zero
// means the field's named Default… constant, and a negative value is an
// error, never quietly the default. A package's withDefaults calls
// NonNegative on its numeric fields, then fills the zero ones (cmp.Or does
// that in one expression: cmp.Or(o.Field, DefaultField)).
//
// It imports the standard library only (internal/ is the ground floor).
package optcheck

import "fmt"

// Field is one numeric option: its name in the Options struct and its
// value. Make one with Named.
type Field struct {
	name     string
	negative bool
}

// Named returns the Field called name with value v (an int, a
// time.Duration, any integer type up to 64 bits, a float: a rate). A NaN
// is not negative; a float field's own check refuses it.
func Named[T ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float64](name string, v T) Field {
	return Field{name: name, negative: v < 0}
}

// NonNegative returns an error naming the first negative field, or nil.
// The error reads "negative Options.NAME (zero means the default)"; the
// caller prefixes its package and operation ("s3store: open: …").
func NonNegative(fields ...Field) error {
	for _, f := range fields {
		if f.negative {
			return fmt.Errorf("negative Options.%s (zero means the default)", f.name)
		}
	}
	return nil
}
