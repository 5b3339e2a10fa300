package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/server/internal/consulmodel"
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
// server) or from one bucket (?bucket=B: an s3:// store on this server),
// and decodes it with publish's own ParsePointer and ParseManifest, so it
// reads every record as publish does. The store that wrote it may have
// had a key prefix of its own (consul://HOST/team, s3://B/team): P is then
// "team/site" here, while the pointer and manifest name keys as that store
// saw them ("site/gen/ID/manifest"); storePrefix recovers "team/".
const (
	pointerSuffix = "/pointer"
	genInfix      = "/gen/"
)

// Limits of the records the console reads from a bucket (KV values are
// bounded by the Consul API already).
const (
	maxRecord   = 64 << 10 // a pointer or a lease record
	maxManifest = 32 << 20 // a manifest: about 150,000 files
)

// pubSource is where publication records are read: the KV key space, in
// one engine transaction, or the current objects of one bucket, each read
// as GET serves it (decrypted when sealed).
type pubSource interface {
	// next returns the least key with prefix greater than after (after
	// "": the first), and live false when that key's current version is
	// a delete marker; "" when there is none.
	next(prefix, after string) (key string, live bool, err error)
	// get returns the value at key and its index, ok false when absent.
	get(key string, limit int64) (v []byte, index uint64, ok bool, err error)
}

type kvSource struct{ tx *engine.Tx }

func (s kvSource) next(prefix, after string) (key string, live bool, err error) {
	start := prefix
	if after != "" {
		start = max(after+"\x00", prefix)
	}
	err = consulmodel.Scan(s.tx, prefix, start, func(kv consulmodel.KV) bool { key = kv.Key; return false })
	return key, true, err
}

func (s kvSource) get(key string, _ int64) ([]byte, uint64, bool, error) {
	kv, ok, err := consulmodel.Get(s.tx, key)
	return kv.Value, kv.ModifyIndex, ok, err
}

type s3Source struct {
	h      *Handler
	bucket string
}

func (s s3Source) next(prefix, after string) (key string, live bool, err error) {
	err = s.h.o.Engine.View(func(tx *engine.Tx) error {
		vs, _ := s3api.ConsoleVersions(tx, s.bucket, prefix, after, 1)
		if len(vs) > 0 {
			key, live = vs[0].Key, !vs[0].DeleteMarker
		}
		return nil
	})
	return key, live, err
}

func (s s3Source) get(key string, limit int64) ([]byte, uint64, bool, error) {
	return s.h.o.S3Object(s.bucket, key, limit)
}

// source returns where view reads: the KV key space through tx, or the
// bucket named by ?bucket= (which must exist).
func (h *Handler) source(tx *engine.Tx, bucket string) (pubSource, error) {
	if bucket == "" {
		return kvSource{tx}, nil
	}
	if h.o.S3Object == nil {
		return nil, errNoObjects
	}
	if _, ok := s3api.ConsoleBucket(tx, bucket); !ok {
		return nil, errNotFoundf("no bucket %q", bucket)
	}
	return s3Source{h, bucket}, nil
}

// storePrefix is the key prefix of the store that wrote the pointer p
// found at pub+"/pointer": pub minus the publication prefix that store
// used, which the manifest key the pointer names ends with. It is "" when
// the pointer's manifest key does not have publish's layout.
func storePrefix(pub string, p publish.Pointer) string {
	own, ok := strings.CutSuffix(p.Manifest, genInfix+p.Generation+"/manifest")
	if !ok || !strings.HasSuffix(pub, own) {
		return ""
	}
	return pub[:len(pub)-len(own)]
}

// before returns a string just below the non-empty key k, so that next
// from it starts at k: no valid UTF-8 key lies between the two (one that
// did would show on two pages, never on none).
func before(k string) string {
	last := k[len(k)-1]
	if last == 0 {
		return k[:len(k)-1]
	}
	return k[:len(k)-1] + string([]byte{last - 1, 0xff})
}

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
	Prefix string `json:"prefix"`
	// Bucket, when set, reads the publications of an s3:// store kept in
	// this server's bucket instead of the KV key space.
	Bucket       string       `json:"bucket,omitempty"`
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

// pubParams reads the parameters every publication view takes.
func pubParams(r *http.Request, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v, err := param(r, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// pubView runs fn on the source of bucket: inside one engine transaction
// for the KV key space; for a bucket, fn's reads are each their own (an
// object read goes through the S3 model, which opens its own).
func (h *Handler) pubView(bucket string, fn func(src pubSource) error) error {
	if bucket == "" {
		return h.o.Engine.View(func(tx *engine.Tx) error {
			src, _ := h.source(tx, "")
			return fn(src)
		})
	}
	var src pubSource
	if err := h.o.Engine.View(func(tx *engine.Tx) (err error) {
		src, err = h.source(tx, bucket)
		return err
	}); err != nil {
		return err
	}
	return fn(src)
}

func (h *Handler) publications(r *http.Request) (any, error) {
	ps, err := pubParams(r, "prefix", "from", "bucket")
	if err != nil {
		return nil, err
	}
	prefix, from, bucket := ps[0], ps[1], ps[2]
	out := Publications{Prefix: prefix, Bucket: bucket, Publications: []PubSummary{}}
	err = h.pubView(bucket, func(src pubSource) error {
		after := ""
		if from > prefix {
			after = before(from)
		}
		for {
			key, live, err := src.next(prefix, after)
			if err != nil || key == "" {
				return err
			}
			if out.Scanned >= h.o.PageSize {
				out.Next = key
				return nil
			}
			out.Scanned++
			after = key
			if i := strings.Index(key[len(prefix):], genInfix); i >= 0 {
				// A generation tree: skip it whole (every key in it is
				// below its root followed by 0xff, never valid UTF-8).
				after = max(key, key[:len(prefix)+i+len(genInfix)]+"\xff")
				continue
			}
			if !live || !strings.HasSuffix(key, pointerSuffix) {
				continue
			}
			v, idx, ok, err := src.get(key, maxRecord)
			if err != nil || !ok {
				continue // gone since, or not a record: not a publication
			}
			if p, ok := asPointer(key, v); ok {
				out.Publications = append(out.Publications, PubSummary{
					Prefix: strings.TrimSuffix(key, pointerSuffix), Generation: p.Generation,
					Token: p.Token, Committed: p.Committed, Modify: idx})
			}
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
	Prefix string `json:"prefix"`
	Bucket string `json:"bucket,omitempty"`
	// StorePrefix is the key prefix of the store that published it
	// ("team/" for consul://HOST/team), which the keys in Files lack.
	StorePrefix string     `json:"store_prefix,omitempty"`
	Pointer     PubSummary `json:"pointer"`
	// Files are as the manifest lists them; their Key is the store's.
	Files       []publish.File `json:"files"`
	FilesMore   bool           `json:"files_more,omitempty"`
	Generations []Generation   `json:"generations"`
	GensMore    bool           `json:"generations_more,omitempty"`
	Grace       string         `json:"grace"`
}

func (h *Handler) publication(r *http.Request) (any, error) {
	ps, err := pubParams(r, "prefix", "bucket")
	if err != nil {
		return nil, err
	}
	prefix, bucket := strings.TrimSuffix(ps[0], "/"), ps[1]
	if prefix == "" {
		return nil, badRequest("want ?prefix=")
	}
	out := Publication{Prefix: prefix, Bucket: bucket, Files: []publish.File{}, Generations: []Generation{}, Grace: publish.DefaultGrace.String()}
	var found bool
	err = h.pubView(bucket, func(src pubSource) error {
		pv, idx, ok, err := src.get(prefix+pointerSuffix, maxRecord)
		if err != nil || !ok {
			return err
		}
		p, ok := asPointer(prefix+pointerSuffix, pv)
		if !ok {
			return nil
		}
		found = true
		out.Pointer = PubSummary{Prefix: prefix, Generation: p.Generation, Token: p.Token, Committed: p.Committed, Modify: idx}
		out.StorePrefix = storePrefix(prefix, p)
		mkey := out.StorePrefix + p.Manifest
		mv, _, ok, err := src.get(mkey, maxManifest)
		if err != nil {
			return err
		}
		if m, good := asManifest(mkey, mv); ok && good {
			out.Files = m.Files
			if len(out.Files) > h.o.PageSize {
				out.Files, out.FilesMore = out.Files[:h.o.PageSize], true
			}
		}
		return h.generations(src, prefix, p, &out)
	})
	if err == nil && !found {
		return nil, errNotFoundf("no publication pointer at %q", prefix+pointerSuffix)
	}
	return out, err
}

// generations fills in out's generations: one seek per generation,
// reading its manifest, then the states and grace GC would judge, by
// publish's own rules (a successor later in the listing names its base).
func (h *Handler) generations(src pubSource, prefix string, p publish.Pointer, out *Publication) error {
	gens := prefix + genInfix
	succOf := map[string]time.Time{} // base id → Created of its successor
	hasManifest := map[string]bool{}
	after := ""
	for {
		key, _, err := src.next(gens, after)
		if err != nil {
			return err
		}
		if key == "" {
			break
		}
		rest := key[len(gens):]
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			after = key
			continue
		}
		id := rest[:i]
		if len(out.Generations) >= h.o.PageSize {
			out.GensMore = true
			break
		}
		g := Generation{ID: id}
		g.Began, _ = publish.GenerationTime(id)
		mkey := gens + id + "/manifest"
		mv, _, ok, err := src.get(mkey, maxManifest)
		if err != nil {
			return err
		}
		if m, good := asManifest(mkey, mv); ok && good {
			g.Created, g.Token, g.Base, g.Files = m.Created, m.Token, m.Base, len(m.Files)
			hasManifest[id] = true
			if m.Base != "" && m.Created.After(succOf[m.Base]) {
				succOf[m.Base] = m.Created
			}
		}
		out.Generations = append(out.Generations, g)
		after = max(key, gens+id+"/\xff")
	}
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
