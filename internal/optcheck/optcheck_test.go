package optcheck

import (
	"testing"
	"time"
)

func TestNonNegativeNamesTheFirstNegativeField(t *testing.T) {
	if err := NonNegative(Named("A", 0), Named("B", time.Second), Named("C", int32(7))); err != nil {
		t.Fatalf("zero and positive fields: %v, want nil", err)
	}
	if err := NonNegative(); err != nil {
		t.Fatalf("no fields: %v, want nil", err)
	}
	if err := NonNegative(Named("F", 0.5), Named("G", 0.0)); err != nil {
		t.Fatalf("zero and positive floats: %v, want nil", err)
	}
	if err := NonNegative(Named("F", -0.5)); err == nil || err.Error() != "negative Options.F (zero means the default)" {
		t.Fatalf("NonNegative(-0.5) = %v, want the error naming F", err)
	}
	err := NonNegative(Named("A", 1), Named("B", -time.Nanosecond), Named("C", -1))
	if err == nil || err.Error() != "negative Options.B (zero means the default)" {
		t.Fatalf("NonNegative = %v, want the error naming B", err)
	}
}
