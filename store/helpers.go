package store

import (
	"bytes"
	"context"
	"io"
	"iter"
)

// All iterates over every key under prefix, page by page. It stops at the
// first error, which it yields with a zero Item.
func All(ctx context.Context, s Store, prefix string) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		opts := &ListOptions{}
		for {
			page, err := s.List(ctx, prefix, opts)
			if err != nil {
				yield(Item{}, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			opts.After = page.Next
		}
	}
}

// PutStream writes the bytes of r under key if cond holds. It streams when
// s implements Streamer and reads r whole into memory otherwise.
func PutStream(ctx context.Context, s Store, key string, r io.Reader, cond Condition) (Version, error) {
	if st, ok := s.(Streamer); ok {
		return st.PutStream(ctx, key, r, cond)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return s.Put(ctx, key, b, cond)
}

// GetStream returns a reader of the key's value. It streams when s
// implements Streamer and reads the value whole otherwise.
func GetStream(ctx context.Context, s Store, key string) (io.ReadCloser, Version, error) {
	if st, ok := s.(Streamer); ok {
		return st.GetStream(ctx, key)
	}
	e, err := s.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return io.NopCloser(bytes.NewReader(e.Value)), e.Version, nil
}
