package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// The obligations of store.Transactor, run when the backend declares
// Capabilities.Transactions and implements the interface.

func openTxn(t *testing.T, h Harness) (context.Context, store.Store, store.Transactor) {
	t.Helper()
	return openAs[store.Transactor](t, h, "Transactions")
}

// wantTxnConflict checks err is ErrConflict in a *TxnError at index.
func wantTxnConflict(t *testing.T, err error, index int, key string) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Txn: err = %v, want ErrConflict", err)
	}
	var te *store.TxnError
	if !errors.As(err, &te) {
		t.Errorf("Txn: err = %v (%T), want a *store.TxnError in its chain", err, err)
		return
	}
	if te.Index != index || te.Key != key {
		t.Errorf("TxnError names op %d %q, want op %d %q", te.Index, te.Key, index, key)
	}
}

var txnTests = []subtest{
	{name: "applies every op and returns put versions that match Get", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		vc := put(t, ctx, s, "c", []byte("checked"), store.Unconditional)
		vd := put(t, ctx, s, "d", []byte("doomed"), store.Unconditional)
		ve := put(t, ctx, s, "e", []byte("old"), store.Unconditional)
		vs, err := tx.Txn(ctx, []store.TxnOp{
			store.PutOp("a", []byte("A"), store.IfAbsent),
			store.PutOp("b", []byte("B"), store.Unconditional),
			store.Check("c", store.IfMatch(vc)),
			store.DeleteOp("d", store.IfMatch(vd)),
			store.PutOp("e", []byte("new"), store.IfMatch(ve)),
			store.Check("f", store.IfAbsent),
		})
		if err != nil {
			t.Fatalf("Txn: %v", err)
		}
		if len(vs) != 6 {
			t.Fatalf("Txn returned %d versions for 6 ops", len(vs))
		}
		for i, v := range vs {
			isPut := i == 0 || i == 1 || i == 4
			if isPut && v == "" {
				t.Errorf("put op %d returned the empty version", i)
			}
			if !isPut && v != "" {
				t.Errorf("op %d (not a put) returned version %q, want the zero Version", i, v)
			}
		}
		if vs[4] == ve {
			t.Errorf("put op 4 returned the version it replaced")
		}
		wantEntry(t, ctx, s, "a", []byte("A"), vs[0])
		wantEntry(t, ctx, s, "b", []byte("B"), vs[1])
		wantEntry(t, ctx, s, "c", []byte("checked"), vc)
		wantMissing(t, ctx, s, "d")
		wantEntry(t, ctx, s, "e", []byte("new"), vs[4])
		wantMissing(t, ctx, s, "f")
	}},
	{name: "a failing check in op 3 leaves ops 1 and 2 unapplied", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		va := put(t, ctx, s, "a", []byte("a0"), store.Unconditional)
		vc1 := put(t, ctx, s, "c", []byte("c0"), store.Unconditional)
		vc2 := put(t, ctx, s, "c", []byte("c1"), store.Unconditional)
		_, err := tx.Txn(ctx, []store.TxnOp{
			store.PutOp("a", []byte("a1"), store.IfMatch(va)),
			store.DeleteOp("b", store.Unconditional),
			store.Check("c", store.IfMatch(vc1)), // stale
		})
		wantTxnConflict(t, err, 2, "c")
		wantEntry(t, ctx, s, "a", []byte("a0"), va)
		wantEntry(t, ctx, s, "c", []byte("c1"), vc2)
	}},
	{name: "failure leaves puts, deletes and creates unapplied", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		vd := put(t, ctx, s, "d", []byte("keep"), store.Unconditional)
		put(t, ctx, s, "x", []byte("exists"), store.Unconditional)
		_, err := tx.Txn(ctx, []store.TxnOp{
			store.PutOp("new", []byte("n"), store.IfAbsent),
			store.DeleteOp("d", store.IfMatch(vd)),
			store.PutOp("x", []byte("y"), store.IfAbsent), // fails
		})
		wantTxnConflict(t, err, 2, "x")
		wantMissing(t, ctx, s, "new")
		wantEntry(t, ctx, s, "d", []byte("keep"), vd)
	}},
	{name: "TxnError names the first failing op", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		put(t, ctx, s, "b", []byte("b"), store.Unconditional)
		put(t, ctx, s, "d", []byte("d"), store.Unconditional)
		_, err := tx.Txn(ctx, []store.TxnOp{
			store.PutOp("a", []byte("a"), store.Unconditional),
			store.Check("b", store.IfAbsent), // fails first
			store.Check("c", store.IfMatch("nope")),
			store.PutOp("d", []byte("x"), store.IfAbsent),
		})
		wantTxnConflict(t, err, 1, "b")
		wantMissing(t, ctx, s, "a")
	}},
	{name: "versions differ from every earlier version of the key", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		seen := map[store.Version]bool{}
		v := put(t, ctx, s, "k", []byte("0"), store.Unconditional)
		seen[v] = true
		for i := range 5 {
			vs, err := tx.Txn(ctx, []store.TxnOp{store.PutOp("k", fmt.Appendf(nil, "%d", i+1), store.IfMatch(v))})
			if err != nil {
				t.Fatalf("Txn %d: %v", i, err)
			}
			v = vs[0]
			if seen[v] {
				t.Errorf("Txn %d returned version %q again", i, v)
			}
			seen[v] = true
			if _, err := tx.Txn(ctx, []store.TxnOp{store.DeleteOp("k", store.IfMatch(v))}); err != nil {
				t.Fatalf("Txn delete %d: %v", i, err)
			}
			vs, err = tx.Txn(ctx, []store.TxnOp{store.PutOp("k", []byte("again"), store.IfAbsent)})
			if err != nil {
				t.Fatalf("Txn create %d: %v", i, err)
			}
			v = vs[0]
			if seen[v] {
				t.Errorf("re-created key got version %q again", v)
			}
			seen[v] = true
		}
	}},
	{name: "malformed transactions are refused and change nothing", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		v := put(t, ctx, s, "k", []byte("keep"), store.Unconditional)
		many := make([]store.TxnOp, store.MaxTxnOps+1)
		for i := range many {
			many[i] = store.PutOp(fmt.Sprintf("many/%d", i), nil, store.Unconditional)
		}
		cases := []struct {
			name string
			ops  []store.TxnOp
			want error
		}{
			{"empty", nil, store.ErrUnsupported},
			{"more than MaxTxnOps", many, store.ErrUnsupported},
			{"key twice", []store.TxnOp{store.PutOp("k", []byte("x"), store.Unconditional), store.Check("k", store.Unconditional)}, store.ErrUnsupported},
			{"delete IfAbsent", []store.TxnOp{store.PutOp("k", []byte("x"), store.Unconditional), store.DeleteOp("z", store.IfAbsent)}, store.ErrUnsupported},
			{"invalid key", []store.TxnOp{store.PutOp("k", []byte("x"), store.Unconditional), store.PutOp("a//b", nil, store.Unconditional)}, store.ErrInvalidKey},
		}
		for _, c := range cases {
			_, err := tx.Txn(ctx, c.ops)
			wantErr(t, "Txn "+c.name, err, c.want)
		}
		wantEntry(t, ctx, s, "k", []byte("keep"), v)
		if page, err := s.List(ctx, "many/", nil); err != nil || len(page.Items) != 0 {
			t.Errorf("after refused transactions List(many/) = %+v, %v", page.Items, err)
		}
	}},
	{name: "MaxTxnOps ops apply together", need: hasTxn, run: func(t *testing.T, h Harness) {
		ctx, s, tx := openTxn(t, h)
		ops := make([]store.TxnOp, store.MaxTxnOps)
		for i := range ops {
			ops[i] = store.PutOp(fmt.Sprintf("many/%03d", i), []byte{byte(i)}, store.IfAbsent)
		}
		vs, err := tx.Txn(ctx, ops)
		if err != nil {
			t.Fatalf("Txn of %d ops: %v", len(ops), err)
		}
		n := 0
		for it, err := range store.All(ctx, s, "many/") {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			i, _ := strconv.Atoi(strings.TrimPrefix(it.Key, "many/"))
			if it.Version != vs[i] {
				t.Errorf("%s listed at %q, Txn returned %q", it.Key, it.Version, vs[i])
			}
			n++
		}
		if n != store.MaxTxnOps {
			t.Errorf("%d keys after a Txn of %d puts", n, store.MaxTxnOps)
		}
	}},
	{name: "concurrent transfers between two keys preserve the sum", need: hasTxn, run: testTransfers},
	{name: "a Txn racing PutIfMatch and DeleteIfMatch on one version: exactly one wins", need: hasTxnCAS, run: testTxnAgainstSingleKeyWrites},
	{name: "readers never see a Txn's writes partly applied", need: hasTxn, run: testTxnSeenWhole},
	{name: "once a Txn's write is visible, single-key writes on the state it replaced lose", need: hasTxnCAS, run: testTxnIsolatedWhileApplied},
}

// testTransfers moves units between two keys with concurrent
// transactions while readers check, with a transaction of two checks,
// that every consistent snapshot sums to the total.
func testTransfers(t *testing.T, h Harness) {
	ctx, s, tx := openTxn(t, h)
	const total = 1000
	put(t, ctx, s, "acct/a", []byte(strconv.Itoa(total/2)), store.Unconditional)
	put(t, ctx, s, "acct/b", []byte(strconv.Itoa(total/2)), store.Unconditional)
	const workers = 4
	per := h.scaled(25, 5)
	var net atomic.Int64 // units moved from a to b by committed transfers
	var snapshots atomic.Int64
	type result struct{ err error }
	res := race(workers+1, func(w int) result {
		rng := rand.New(rand.NewPCG(uint64(w), 2))
		if w == workers {
			return result{readSnapshots(ctx, s, tx, total, 4*per, &snapshots)}
		}
		for range per {
			amount := rng.IntN(7) - 3
			if err := transfer(ctx, s, tx, amount); err != nil {
				return result{err: fmt.Errorf("worker %d: %w", w, err)}
			}
			net.Add(int64(amount))
		}
		return result{}
	})
	for _, r := range res {
		if r.err != nil {
			t.Error(r.err)
		}
	}
	a := atoi(t, get(t, ctx, s, "acct/a").Value)
	b := atoi(t, get(t, ctx, s, "acct/b").Value)
	if a+b != total || int64(a) != total/2-net.Load() {
		t.Errorf("after transfers a=%d b=%d (sum %d), want a=%d and sum %d", a, b, a+b, total/2-net.Load(), total)
	}
	t.Logf("%d consistent snapshots read during %d transfers", snapshots.Load(), workers*per)
}

func atoi(t *testing.T, b []byte) int {
	t.Helper()
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("value %q is not a number", b)
	}
	return n
}

// getAccounts reads the two accounts.
func getAccounts(ctx context.Context, s store.Store) (a, b store.Entry, err error) {
	if a, err = s.Get(ctx, "acct/a"); err != nil {
		return a, b, err
	}
	b, err = s.Get(ctx, "acct/b")
	return a, b, err
}

// transfer moves amount from a to b with one two-key transaction, retried
// on conflict a bounded number of times.
func transfer(ctx context.Context, s store.Store, tx store.Transactor, amount int) error {
	for range maxAttempts {
		ea, eb, err := getAccounts(ctx, s)
		if err != nil {
			return err
		}
		a, err1 := strconv.Atoi(string(ea.Value))
		b, err2 := strconv.Atoi(string(eb.Value))
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		runtime.Gosched() // let other workers interleave
		_, err = tx.Txn(ctx, []store.TxnOp{
			store.PutOp("acct/a", []byte(strconv.Itoa(a-amount)), store.IfMatch(ea.Version)),
			store.PutOp("acct/b", []byte(strconv.Itoa(b+amount)), store.IfMatch(eb.Version)),
		})
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("no transfer after %d attempts", maxAttempts)
}

// readSnapshots reads both keys and confirms the pair with a transaction
// of two checks; every confirmed pair must sum to total.
func readSnapshots(ctx context.Context, s store.Store, tx store.Transactor, total, n int, count *atomic.Int64) error {
	for range n {
		ea, eb, err := getAccounts(ctx, s)
		if err != nil {
			return err
		}
		runtime.Gosched()
		_, err = tx.Txn(ctx, []store.TxnOp{
			store.Check("acct/a", store.IfMatch(ea.Version)),
			store.Check("acct/b", store.IfMatch(eb.Version)),
		})
		if errors.Is(err, store.ErrConflict) {
			continue // not a snapshot; try again
		}
		if err != nil {
			return err
		}
		a, _ := strconv.Atoi(string(ea.Value))
		b, _ := strconv.Atoi(string(eb.Value))
		if a+b != total {
			return fmt.Errorf("confirmed snapshot a=%s@%s b=%s@%s sums to %d, want %d", ea.Value, ea.Version, eb.Value, eb.Version, a+b, total)
		}
		count.Add(1)
	}
	return nil
}
