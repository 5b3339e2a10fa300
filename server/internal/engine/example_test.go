package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// A check-and-set in one durable Update: the condition and the write are
// one atomic step, and the write's index is its new ModifyIndex.
func ExampleEngine_Update() {
	dir, _ := os.MkdirTemp("", "engine-example")
	defer os.RemoveAll(dir)
	e, err := engine.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()

	errExists := errors.New("exists")
	create := func(tx *engine.Tx) error {
		if _, ok, _ := tx.GetRecord("jobs/a"); ok {
			return errExists // nothing written, no index consumed
		}
		tx.PutRecord(engine.Record{Key: "jobs/a", Data: []byte("queued")})
		return nil
	}
	idx, err := e.Update(ctx, create)
	fmt.Println(idx, err)
	_, err = e.Update(ctx, create)
	fmt.Println(err)
	fmt.Println(e.Index())
	// Output:
	// 2 <nil>
	// exists
	// 2
}

// A blocking read: read, and if nothing newer than what the caller has
// seen, wait for a commit under the prefix, then read again.
func ExampleEngine_Wait() {
	dir, _ := os.MkdirTemp("", "engine-example")
	defer os.RemoveAll(dir)
	e, err := engine.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()

	var seen uint64
	e.View(func(tx *engine.Tx) error { seen = tx.Index(); return nil })
	go e.Update(ctx, func(tx *engine.Tx) error {
		tx.PutRecord(engine.Record{Key: "config/x", Data: []byte("1")})
		return nil
	})
	if err := e.Wait(ctx, "config/", seen); err != nil {
		panic(err)
	}
	e.View(func(tx *engine.Tx) error {
		kv, _, _ := tx.GetRecord("config/x")
		fmt.Printf("%s at %d\n", kv.Data, kv.ModifyIndex)
		return nil
	})
	// Output: 1 at 2
}
