package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store/memstore"
)

// Run holds the lease while a function runs, renewing it in the
// background, and releases it afterwards. The function's context is
// cancelled if the lease is lost; the fencing token goes to the protected
// resource.
func ExampleLocker_Run() {
	ctx := context.Background()
	s := memstore.New()
	lk, err := lease.NewLocker(s, "locks/nightly-report", &lease.Options{Holder: "worker-1"})
	if err != nil {
		panic(err)
	}
	for range 2 {
		err = lk.Run(ctx, func(ctx context.Context, l *lease.Lease) error {
			_, err := lease.FencedPut(ctx, s, "reports/nightly", []byte("done"), l.Token())
			fmt.Println("wrote the report with token", l.Token())
			return err
		})
		if err != nil {
			panic(err)
		}
	}
	rec, _, _ := lease.Inspect(ctx, s, "locks/nightly-report")
	fmt.Println("released:", rec.Released, "token:", rec.Token)
	// Output:
	// wrote the report with token 1
	// wrote the report with token 2
	// released: true token: 2
}

// TryAcquire makes one attempt and says which of three things happened.
func ExampleLocker_TryAcquire() {
	ctx := context.Background()
	s := memstore.New()
	a, _ := lease.NewLocker(s, "locks/job", &lease.Options{Holder: "a"})
	b, _ := lease.NewLocker(s, "locks/job", &lease.Options{Holder: "b", TTL: time.Minute})

	l, err := a.TryAcquire(ctx)
	fmt.Println("a acquired:", err == nil, "token", l.Token())

	_, err = b.TryAcquire(ctx)
	var held *lease.HeldError
	switch {
	case errors.As(err, &held):
		fmt.Println("b: held by", held.Holder, "with token", held.Token)
	case errors.Is(err, lease.ErrLostRace):
		fmt.Println("b: lost a race; retry at once")
	case err != nil:
		fmt.Println("b: store error:", err)
	}

	l.Release(ctx)
	l2, err := b.TryAcquire(ctx)
	fmt.Println("b after release:", err == nil, "token", l2.Token())
	// Output:
	// a acquired: true token 1
	// b: held by a with token 1
	// b after release: true token 2
}

// A holder whose lease was taken over (it was paused, say) still believes
// it holds it. The protected resource refuses its writes because its
// token is older than one it has accepted.
func ExampleFencedPut() {
	ctx := context.Background()
	s := memstore.New()
	const resource = "reports/nightly"

	lease.FencedPut(ctx, s, resource, []byte("from the new holder"), 8)
	_, err := lease.FencedPut(ctx, s, resource, []byte("from a zombie"), 7)
	fmt.Println(errors.Is(err, lease.ErrFenced))

	v, tok, _, _ := lease.FencedGet(ctx, s, resource)
	fmt.Printf("%s (token %d)\n", v, tok)
	// Output:
	// true
	// from the new holder (token 8)
}

// Hold waits for the lease and keeps it renewed in the background. Work
// that must stop when the lease is lost watches Done or Context.
func ExampleLocker_Hold() {
	ctx := context.Background()
	lk, _ := lease.NewLocker(memstore.New(), "locks/leader", &lease.Options{Holder: "node-a", TTL: 10 * time.Second})
	l, err := lk.Hold(ctx)
	if err != nil {
		panic(err)
	}
	select {
	case <-l.Done():
		fmt.Println("lost:", l.Err())
	default:
		fmt.Println("leading with token", l.Token())
	}
	l.Release(ctx)
	<-l.Done()
	fmt.Println(l.Err())
	// Output:
	// leading with token 1
	// lease released
}
