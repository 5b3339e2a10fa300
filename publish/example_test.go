package publish_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store/memstore"
)

// Publish two files at once, then read them back from a snapshot.
func Example() {
	ctx := context.Background()
	s := memstore.New()

	w, err := publish.Begin(ctx, s, "reports/daily", nil)
	if err != nil {
		panic(err)
	}
	if err := w.Put(ctx, "summary.txt", strings.NewReader("3 incidents")); err != nil {
		panic(err)
	}
	if err := w.Put(ctx, "detail/incidents.csv", strings.NewReader("id,sev\n1,low\n2,low\n3,high\n")); err != nil {
		panic(err)
	}
	c, err := w.Commit(ctx) // the one atomic step: both files appear together
	if err != nil {
		panic(err)
	}
	fmt.Println("committed", c.Files, "files")

	snap, err := publish.Open(ctx, s, "reports/daily")
	if err != nil {
		panic(err)
	}
	for _, f := range snap.Files() {
		fmt.Println(f.Name, f.Size)
	}
	b, _ := snap.ReadFile(ctx, "summary.txt")
	fmt.Println(string(b))
	// Output:
	// committed 2 files
	// detail/incidents.csv 26
	// summary.txt 11
	// 3 incidents
}
