package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/latchkey/latchkey/store"
)

func TestValidateTxn(t *testing.T) {
	put := func(k string) store.TxnOp { return store.PutOp(k, []byte("v"), store.Unconditional) }
	max := make([]store.TxnOp, store.MaxTxnOps)
	for i := range max {
		max[i] = put(fmt.Sprintf("k%d", i))
	}
	tests := []struct {
		name  string
		ops   []store.TxnOp
		want  error // nil: valid
		index int   // of the TxnError, -1 when none
	}{
		{"one put", []store.TxnOp{put("a")}, nil, -1},
		{"check, put, delete", []store.TxnOp{store.Check("a", store.IfAbsent), put("b"), store.DeleteOp("c", store.IfMatch("v"))}, nil, -1},
		{"MaxTxnOps", max, nil, -1},
		{"empty", nil, store.ErrUnsupported, -1},
		{"MaxTxnOps+1", append(max[:len(max):len(max)], put("extra")), store.ErrUnsupported, -1},
		{"invalid key", []store.TxnOp{put("a"), put("b//c")}, store.ErrInvalidKey, 1},
		{"key twice", []store.TxnOp{put("a"), put("b"), store.Check("a", store.Unconditional)}, store.ErrUnsupported, 2},
		{"delete if-absent", []store.TxnOp{store.DeleteOp("a", store.IfAbsent)}, store.ErrUnsupported, 0},
		{"unknown kind", []store.TxnOp{put("a"), {Kind: 9, Key: "b"}}, store.ErrUnsupported, 1},
		{"zero kind", []store.TxnOp{{Key: "a"}}, store.ErrUnsupported, 0},
	}
	for _, tt := range tests {
		err := store.ValidateTxn(tt.ops)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		var te *store.TxnError
		switch {
		case tt.index < 0 && errors.As(err, &te):
			t.Errorf("%s: unexpected TxnError %v", tt.name, te)
		case tt.index >= 0 && (!errors.As(err, &te) || te.Index != tt.index || te.Key != tt.ops[tt.index].Key):
			t.Errorf("%s: err = %v, want a TxnError at op %d", tt.name, err, tt.index)
		}
	}
}

func TestTxnOpConstructors(t *testing.T) {
	c := store.Check("a", store.IfAbsent)
	p := store.PutOp("b", []byte("v"), store.IfMatch("1"))
	d := store.DeleteOp("c", store.Unconditional)
	if c.Kind != store.OpCheck || c.Key != "a" || !c.Cond.IsAbsent() {
		t.Errorf("Check = %+v", c)
	}
	if v, _ := p.Cond.Match(); p.Kind != store.OpPut || p.Key != "b" || string(p.Value) != "v" || v != "1" {
		t.Errorf("PutOp = %+v", p)
	}
	if d.Kind != store.OpDelete || d.Key != "c" || !d.Cond.IsUnconditional() {
		t.Errorf("DeleteOp = %+v", d)
	}
	for k, want := range map[store.OpKind]string{store.OpCheck: "check", store.OpPut: "put", store.OpDelete: "delete", 9: "OpKind(9)"} {
		if k.String() != want {
			t.Errorf("OpKind(%d).String() = %q, want %q", uint8(k), k.String(), want)
		}
	}
}
