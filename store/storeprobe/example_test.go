package storeprobe_test

import (
	"context"
	"fmt"

	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storeprobe"
)

// Probe a store before relying on its declared capabilities.
func ExampleRun() {
	s := memstore.New()
	defer s.Close()
	rep, err := storeprobe.Run(context.Background(), s, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Results {
		if r.Status != storeprobe.Pass {
			fmt.Println(r.Status, r.Check, "-", r.Detail)
		}
	}
	fmt.Println("verified:", rep.OK(), "leftovers:", len(rep.Leftovers))
	// Output:
	// SKIP streaming/not declared - not declared: values are buffered whole in memory
	// verified: true leftovers: 0
}
