package storeurl_test

import (
	"context"
	"fmt"
	"os"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// Open a directory store by URL, as the CLI's --store flag does.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "latchkey-example-")
	defer os.RemoveAll(dir)

	s, err := storeurl.Open(ctx, storeurl.FileURL(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if _, err := s.Put(ctx, "greeting", []byte("hello"), store.IfAbsent); err != nil {
		fmt.Println(err)
		return
	}
	e, _ := s.Get(ctx, "greeting")
	fmt.Println(string(e.Value))

	_, err = storeurl.Open(ctx, "ftp://example.com/x")
	fmt.Println(err)
	// Output:
	// hello
	// storeurl: "ftp://example.com/x": unknown scheme "ftp"; want one of azblob, consul, etcd, file, gs, mem, s3
}
