package cas_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store/memstore"
)

// Increment a counter safely, however many writers race on it.
func ExampleUpdate() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	incr := func(cur []byte, exists bool) (cas.Decision, error) {
		n := 0
		if exists {
			var err error
			if n, err = strconv.Atoi(string(cur)); err != nil {
				return cas.Decision{}, err // stops Update; nothing is written
			}
		}
		return cas.Set([]byte(strconv.Itoa(n + 1))), nil
	}
	for range 3 {
		if _, err := cas.Update(ctx, s, "jobs/counter", incr, nil); err != nil {
			fmt.Println(err)
			return
		}
	}
	e, _ := s.Get(ctx, "jobs/counter")
	fmt.Println(string(e.Value))
	// Output: 3
}

// A function may decide that nothing needs writing.
func ExampleAbort() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	setOnce := func(cur []byte, exists bool) (cas.Decision, error) {
		if exists {
			return cas.Abort(), nil
		}
		return cas.Set([]byte("first")), nil
	}
	for range 2 {
		res, err := cas.Update(ctx, s, "config/owner", setOnce, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Outcome, string(res.Entry.Value))
	}
	// Output:
	// written first
	// aborted first
}
