package etcdstore

import (
	"context"
	"math"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/latchkey/latchkey/store"
)

// List implements store.Store with one linearizable range read per page:
// keys only (no values), from just after ListOptions.After (or the
// prefix) to the end of the prefix, ascending by key, at most Limit keys.
// etcd says whether more keys follow, so a page that ends the listing
// has an empty Next.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	lo := opts.Bounded(listPageSize, math.MaxInt)
	limit := lo.Limit
	full := s.prefix + prefix
	start := full
	if lo.After != "" && lo.After >= prefix {
		start = s.prefix + lo.After + "\x00" // the least key greater than After
	}
	if full == "" && start == "" {
		start = "\x00" // etcd refuses an empty key; no key is below "\x00"
	}
	// The end of the prefix's range; "\x00" (for an empty or all-0xff
	// prefix) means no upper bound.
	end := clientv3.GetPrefixRangeEnd(full)
	if full != "" && !strings.HasPrefix(start, full) {
		return store.Page{}, nil // After is past every key of the prefix
	}
	var resp *clientv3.GetResponse
	actx, err := s.call(ctx, false, func(actx context.Context) (err error) {
		resp, err = s.c.Get(actx, start, clientv3.WithRange(end), clientv3.WithKeysOnly(),
			clientv3.WithLimit(int64(limit)), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		return err
	})
	if err != nil {
		return store.Page{}, s.opError(ctx, actx, "list", prefix, false, err)
	}
	page := store.Page{Items: make([]store.Item, 0, len(resp.Kvs))}
	for _, kv := range resp.Kvs {
		page.Items = append(page.Items, store.Item{Key: strings.TrimPrefix(string(kv.Key), s.prefix), Version: version(kv.ModRevision)})
	}
	if resp.More && len(page.Items) > 0 {
		page.Next = page.Items[len(page.Items)-1].Key
	}
	return page, nil
}
