package azblobstore

import (
	"context"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// maxListPage is Azure's largest List Blobs page.
const maxListPage = 5000

// List returns one page of keys under prefix in the order of their blob
// names (see the package doc). Azure continues a listing only from its
// own opaque marker, never from a key, so Page.Next is the last key and
// the store remembers the marker that follows it; an After the store has
// no marker for is served by listing from the start of prefix and
// skipping names up to After's.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	if err := s.check(ctx, "list", prefix, true); err != nil {
		return store.Page{}, err
	}
	o := opts.Bounded(maxListPage, maxListPage)
	limit := o.Limit
	namePrefix := s.prefix + blobName(prefix)
	var marker *string
	after := ""
	if o.After != "" {
		after = s.prefix + blobName(o.After)
		if m, ok := s.markers.get(namePrefix, after); ok {
			marker = &m
		}
	}
	page := store.Page{Items: make([]store.Item, 0, min(limit, 1000))}
	for {
		want := int32(limit - len(page.Items))
		out, err := s.read.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
			Prefix: &namePrefix, Marker: marker, MaxResults: &want,
		}).NextPage(ctx)
		if err != nil {
			return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
		}
		for _, b := range out.Segment.BlobItems {
			if b.Name == nil || !strings.HasPrefix(*b.Name, s.prefix) || (after != "" && *b.Name <= after) {
				continue
			}
			var etag = b.Properties.ETag
			page.Items = append(page.Items, store.Item{Key: keyOf((*b.Name)[len(s.prefix):]), Version: quoteETag(etag)})
		}
		if out.NextMarker == nil || *out.NextMarker == "" {
			return page, nil // complete
		}
		marker = out.NextMarker
		if len(page.Items) >= limit {
			last := page.Items[len(page.Items)-1].Key
			page.Next = last
			s.markers.put(namePrefix, s.prefix+blobName(last), *marker)
			return page, nil
		}
		if err := ctx.Err(); err != nil {
			return store.Page{}, opError("list", prefix, classify(resolve.OpRead, err), err)
		}
	}
}

// markerCacheSize bounds the remembered listing markers.
const markerCacheSize = 1024

// markerCache remembers the Azure marker that follows a page's last blob
// name, so that paging by key costs one request per page. It is bounded;
// when full it forgets half its entries at random (map order).
type markerCache struct {
	mu  sync.Mutex
	max int
	m   map[[2]string]string
}

func newMarkerCache(max int) *markerCache {
	return &markerCache{max: max, m: make(map[[2]string]string)}
}

func (c *markerCache) get(prefix, after string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[[2]string{prefix, after}]
	return m, ok
}

func (c *markerCache) put(prefix, after, marker string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		n := 0
		for k := range c.m {
			if n >= c.max/2 {
				break
			}
			delete(c.m, k)
			n++
		}
	}
	c.m[[2]string{prefix, after}] = marker
}
