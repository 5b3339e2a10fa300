package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

func errNotFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNotFound}, args...)...)
}

func urlPathEscape(s string) string { return url.PathEscape(s) }

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// The layout publish (package publish) writes under a prefix P:
//
//	P/pointer                   the current generation (JSON)
//	P/gen/ID/manifest           a generation's file list (JSON)
//	P/gen/ID/data/NAME          a generation's files
//
// The console reads it from the KV key space (a consul:// store on this
// server) and decodes it with publish's own ParsePointer and ParseManifest,
// so it reads every record as publish does.
const (
	pointerSuffix = "/pointer"
	genInfix      = "/gen/"
)

// PubSummary is one prefix with a pointer.
type PubSummary struct {
	Prefix     string    `json:"prefix"`
	Generation string    `json:"generation"`
	Token      uint64    `json:"token,omitempty"`
	Committed  time.Time `json:"committed"`
	Modify     uint64    `json:"modify_index"`
}

// Publications is the publications page: the pointers found in one page
// of keys (generation trees are skipped, not read).
type Publications struct {
	Prefix       string       `json:"prefix"`
	Publications []PubSummary `json:"publications"`
	Scanned      int          `json:"scanned"`
	Next         string       `json:"next,omitempty"`
}

// asPointer decodes the value at key as a publication pointer, or says
// it is none.
func asPointer(key string, v []byte) (publish.Pointer, bool) {
	p, err := publish.ParsePointer(key, v)
	return p, err == nil
}

// asManifest decodes the value at key as a generation's manifest.
func asManifest(key string, v []byte) (publish.Manifest, bool) {
	m, err := publish.ParseManifest(key, v)
	return m, err == nil
}

func (h *Handler) publications(r *http.Request) (any, error) {
	prefix, err := param(r, "prefix")
	if err != nil {
		return nil, err
	}
	from, err := param(r, "from")
	if err != nil {
		return nil, err
	}
	out := Publications{Prefix: prefix, Publications: []PubSummary{}}
	err = h.o.Engine.View(func(tx *engine.Tx) error {
		start := max(from, prefix)
		for {
			seek := ""
			tx.ScanKV(prefix, start, func(kv engine.KV) bool {
				if out.Scanned >= h.o.PageSize {
					out.Next = kv.Key
					return false
				}
				out.Scanned++
				if i := strings.Index(kv.Key[len(prefix):], genInfix); i >= 0 {
					// A generation tree: skip it whole.
					seek = successor(kv.Key[:len(prefix)+i+len(genInfix)])
					return false
				}
				if strings.HasSuffix(kv.Key, pointerSuffix) {
					if p, ok := asPointer(kv.Key, kv.Value); ok {
						out.Publications = append(out.Publications, PubSummary{
							Prefix: strings.TrimSuffix(kv.Key, pointerSuffix), Generation: p.Generation,
							Token: p.Token, Committed: p.Committed, Modify: kv.ModifyIndex})
					}
				}
				return true
			})
			if seek == "" || out.Next != "" {
				return nil
			}
			start = seek
		}
	})
	return out, err
}

// Generation is one generation under a publication prefix.
type Generation struct {
	ID    string    `json:"id"`
	Began time.Time `json:"began,omitzero"`
	// State is "current", or what publish.GenerationStateOf says (the
	// words `latchkey publish list` and GC use): superseded, abandoned,
	// unfinished.
	State   string    `json:"state"`
	Created time.Time `json:"created,omitzero"`
	Token   uint64    `json:"token,omitempty"`
	Base    string    `json:"base,omitempty"`
	Files   int       `json:"files"`
	// GCAfter is when GC with the default grace may delete it (never for
	// the current generation).
	GCAfter time.Time `json:"gc_after,omitzero"`
}

// Publication is one publication prefix in detail.
type Publication struct {
	Prefix      string         `json:"prefix"`
	Pointer     PubSummary     `json:"pointer"`
	Files       []publish.File `json:"files"`
	FilesMore   bool           `json:"files_more,omitempty"`
	Generations []Generation   `json:"generations"`
	GensMore    bool           `json:"generations_more,omitempty"`
	Grace       string         `json:"grace"`
}

func (h *Handler) publication(r *http.Request) (any, error) {
	prefix, err := param(r, "prefix")
	if err != nil {
		return nil, err
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return nil, badRequest("want ?prefix=")
	}
	out := Publication{Prefix: prefix, Files: []publish.File{}, Generations: []Generation{}, Grace: publish.DefaultGrace.String()}
	var found bool
	err = h.o.Engine.View(func(tx *engine.Tx) error {
		pkv, ok := tx.GetKV(prefix + pointerSuffix)
		if !ok {
			return nil
		}
		p, ok := asPointer(pkv.Key, pkv.Value)
		if !ok {
			return nil
		}
		found = true
		out.Pointer = PubSummary{Prefix: prefix, Generation: p.Generation, Token: p.Token, Committed: p.Committed, Modify: pkv.ModifyIndex}
		if mkv, ok := tx.GetKV(p.Manifest); ok {
			if m, ok := asManifest(mkv.Key, mkv.Value); ok {
				out.Files = m.Files
				if len(out.Files) > h.o.PageSize {
					out.Files, out.FilesMore = out.Files[:h.o.PageSize], true
				}
			}
		}
		// Generations: one seek per generation, reading its manifest.
		gens := prefix + genInfix
		succOf := map[string]time.Time{} // base id → Created of its successor
		hasManifest := map[string]bool{}
		start := gens
		for {
			var id string
			tx.ScanKV(gens, start, func(kv engine.KV) bool {
				rest := kv.Key[len(gens):]
				if i := strings.IndexByte(rest, '/'); i > 0 {
					id = rest[:i]
				}
				return false
			})
			if id == "" {
				break
			}
			if len(out.Generations) >= h.o.PageSize {
				out.GensMore = true
				break
			}
			g := Generation{ID: id}
			g.Began, _ = publish.GenerationTime(id)
			if mkv, ok := tx.GetKV(gens + id + "/manifest"); ok {
				if m, ok := asManifest(mkv.Key, mkv.Value); ok {
					g.Created, g.Token, g.Base, g.Files = m.Created, m.Token, m.Base, len(m.Files)
					hasManifest[id] = true
					if m.Base != "" && m.Created.After(succOf[m.Base]) {
						succOf[m.Base] = m.Created
					}
				}
			}
			out.Generations = append(out.Generations, g)
			start = successor(gens + id + "/")
		}
		// The states and grace GC would judge, by publish's own rules
		// (a successor later in the listing names its base).
		for i := range out.Generations {
			g := &out.Generations[i]
			if g.ID == p.Generation {
				g.State = "current"
				continue
			}
			g.State = string(publish.GenerationStateOf(hasManifest[g.ID], succOf[g.ID]))
			if !g.Began.IsZero() {
				g.GCAfter = publish.GraceEnds(g.Began, succOf[g.ID], publish.DefaultGrace)
			}
		}
		return nil
	})
	if err == nil && !found {
		return nil, errNotFoundf("no publication pointer at %q", prefix+pointerSuffix)
	}
	return out, err
}

// S3 is the S3 page: the buckets, or one bucket's versions and uploads.
type S3 struct {
	Buckets      []s3api.BucketInfo    `json:"buckets,omitempty"`
	BucketsNext  string                `json:"buckets_next,omitempty"`
	Bucket       *s3api.BucketInfo     `json:"bucket,omitempty"`
	Prefix       string                `json:"prefix,omitempty"`
	Versions     []s3api.ObjectVersion `json:"versions,omitempty"`
	VersionsNext string                `json:"versions_next,omitempty"`
	Uploads      []s3api.UploadInfo    `json:"uploads,omitempty"`
	UploadsMore  bool                  `json:"uploads_more,omitempty"`
}

func (h *Handler) s3(r *http.Request) (any, error) {
	bucket, err := param(r, "bucket")
	if err != nil {
		return nil, err
	}
	prefix, err := param(r, "prefix")
	if err != nil {
		return nil, err
	}
	after, err := param(r, "after")
	if err != nil {
		return nil, err
	}
	var out S3
	err = h.o.Engine.View(func(tx *engine.Tx) error {
		if bucket == "" {
			var more bool
			out.Buckets, more = s3api.ConsoleBuckets(tx, after, h.o.PageSize)
			if more {
				out.BucketsNext = out.Buckets[len(out.Buckets)-1].Name
			}
			if out.Buckets == nil {
				out.Buckets = []s3api.BucketInfo{}
			}
			return nil
		}
		b, ok := s3api.ConsoleBucket(tx, bucket)
		if !ok {
			return errNotFoundf("no bucket %q", bucket)
		}
		out.Bucket, out.Prefix = &b, prefix
		var more bool
		out.Versions, more = s3api.ConsoleVersions(tx, bucket, prefix, after, h.o.PageSize)
		if more {
			// Next page: after the last whole key shown; drop that
			// key's versions from this page if it may continue.
			last := out.Versions[len(out.Versions)-1].Key
			cut := len(out.Versions)
			for cut > 0 && out.Versions[cut-1].Key == last {
				cut--
			}
			if cut > 0 {
				out.Versions = out.Versions[:cut]
				out.VersionsNext = out.Versions[cut-1].Key
			} else {
				out.VersionsNext = last // one key with more versions than a page
			}
		}
		if out.Versions == nil {
			out.Versions = []s3api.ObjectVersion{}
		}
		out.Uploads, out.UploadsMore = s3api.ConsoleUploads(tx, bucket, h.o.PageSize)
		return nil
	})
	return out, err
}
