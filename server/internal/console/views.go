package console

import (
	"bytes"
	"encoding/json"
	"net/http"

	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/keyrange"
	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

// countCap bounds the counts of the overview: counting is a cursor walk,
// so past this many the overview says "N+" instead of reading on.
const countCap = 10000

// Count is a count that may have stopped at countCap.
type Count struct {
	N    int  `json:"n"`
	More bool `json:"more,omitempty"` // at least N
}

// Overview is the overview page.
type Overview struct {
	Version   string        `json:"version"`
	GoVersion string        `json:"go_version"`
	DataDir   string        `json:"data_dir"`
	Started   time.Time     `json:"started"`
	Uptime    time.Duration `json:"uptime_ns"`
	Index     uint64        `json:"index"`
	Failed    string        `json:"failed,omitempty"`
	// The Consul figures (nil without access to Consul data).
	Keys            *Count `json:"keys,omitempty"`
	Sessions        *Count `json:"sessions,omitempty"`
	BlockingQueries *int   `json:"blocking_queries,omitempty"`
	SessionTimers   *int   `json:"session_timers,omitempty"`
	LockDelays      *int   `json:"lock_delays,omitempty"`
	// The S3 figures (nil without access to S3 data).
	Buckets        *Count `json:"buckets,omitempty"`
	ObjectVersions *Count `json:"object_versions,omitempty"`
	// Metrics are what /-/metrics exports, shown to those who may read it
	// (the Consul access: the ACL token when there is one).
	HasMetrics bool    `json:"has_metrics"`
	Metrics    Metrics `json:"metrics"`
	FsyncP50   float64 `json:"fsync_p50_s"` // since start; NaN-free (0 when empty)
	FsyncP99   float64 `json:"fsync_p99_s"`
}

func (h *Handler) overview(r *http.Request) (any, error) {
	now := h.o.Now()
	e := h.o.Engine
	o := Overview{Version: h.o.Version, GoVersion: runtime.Version(), DataDir: e.Dir(),
		Started: h.o.Started, Uptime: now.Sub(h.o.Started).Round(time.Second), Index: e.Index()}
	if err := e.Err(); err != nil {
		o.Failed = err.Error()
	}
	if h.o.ConsulStats != nil {
		st := h.o.ConsulStats()
		o.BlockingQueries, o.SessionTimers, o.LockDelays = &st.BlockingQueries, &st.SessionTimers, &st.LockDelays
	}
	o.Keys, o.Sessions, o.Buckets, o.ObjectVersions = new(Count), new(Count), new(Count), new(Count)
	o.Metrics, o.HasMetrics = h.metrics(now.UnixMilli())
	o.FsyncP50, o.FsyncP99 = finite(o.Metrics.Fsync.Quantile(0.5)), finite(o.Metrics.Fsync.Quantile(0.99))
	err := e.View(func(tx *engine.Tx) error {
		o.Keys.N, o.Keys.More = consulmodel.Count(tx, "", countCap)
		o.Sessions.N, o.Sessions.More = consulmodel.SessionCount(tx, countCap)
		o.Buckets.N, o.Buckets.More = s3api.ConsoleCount(tx, "buckets", countCap)
		o.ObjectVersions.N, o.ObjectVersions.More = s3api.ConsoleCount(tx, "versions", countCap)
		return nil
	})
	return o, err
}

// redact leaves out of a view's data what a does not cover (only the
// overview mixes kinds of data; every other view is refused whole).
func redact(data any, a Access) any {
	o, ok := data.(Overview)
	if !ok {
		return data
	}
	if !a.Consul {
		o.Keys, o.Sessions, o.BlockingQueries, o.SessionTimers, o.LockDelays = nil, nil, nil, nil, nil
		o.HasMetrics, o.Metrics, o.FsyncP50, o.FsyncP99 = false, Metrics{}, 0, 0
	}
	if !a.S3 {
		o.Buckets, o.ObjectVersions = nil, nil
	}
	return o
}

func finite(f float64) float64 {
	if f != f {
		return 0
	}
	return f
}

// Lock states.
const (
	StateHeld     = "held"
	StateReleased = "released"
	StateStale    = "looks stale"
	StateForced   = "forced"
)

// Lock is one lock: a latchkey lease record or a Consul session lock.
type Lock struct {
	Key  string `json:"key"`
	Kind string `json:"kind"` // "lease" or "consul"
	// Holder: the lease record's holder, or the session's name and node.
	Holder string `json:"holder"`
	// Token: the lease's fencing token, or the key's LockIndex.
	Token uint64        `json:"token"`
	TTL   time.Duration `json:"ttl_ns"`
	// Renewed is the wall time of the last renewal as the holder wrote
	// it (leases only); Age is how long ago that was on this server's
	// clock.
	Renewed  time.Time     `json:"renewed,omitzero"`
	Acquired time.Time     `json:"acquired,omitzero"`
	Age      time.Duration `json:"age_ns"`
	State    string        `json:"state"`
	Session  string        `json:"session,omitempty"`
	Modify   uint64        `json:"modify_index"`
	// Queue is how many wait in the lease's queue (package lease, whose
	// Acquire waits in line; leases only).
	Queue int `json:"queue"`
}

// Locks is the locks page: one page of keys under Prefix, with the locks
// found among them.
type Locks struct {
	Prefix string `json:"prefix"`
	// Bucket, when set, reads the lease records of an s3:// store kept
	// in this server's bucket instead of the KV key space.
	Bucket string `json:"bucket,omitempty"`
	Sort   string `json:"sort"`
	Locks  []Lock `json:"locks"`
	// Scanned is how many keys this page read; Next, when set, is where
	// the next page starts.
	Scanned int    `json:"scanned"`
	Next    string `json:"next,omitempty"`
}

// leaseRecord is lease.Record read leniently: unknown fields are kept
// for the "forced" mark, missing ones stay zero.
// asLease decodes v as a lease record with the lease package's own
// decoder; ok is false for any other value.
func asLease(key string, v []byte) (lease.Record, bool) {
	if len(v) == 0 || v[0] != '{' || !bytes.Contains(v, []byte(`"nonce"`)) {
		return lease.Record{}, false
	}
	r, err := lease.ParseRecord(key, v)
	return r, err == nil
}

// leaseLock is how the console shows a lease record, by the lease
// package's rules: released by force, released by its holder, looking
// stale (its holder's last write older than lease.StaleAfter on our clock,
// the rule lock run and lock list use; only a hint, since takeover never
// depends on clocks), or held.
func leaseLock(kv consulmodel.KV, r lease.Record, now time.Time) Lock {
	l := Lock{Key: kv.Key, Kind: "lease", Holder: r.Holder, Token: r.Token,
		TTL: r.TTL, Renewed: r.Renewed, Acquired: r.Acquired, Modify: kv.ModifyIndex}
	if !r.Renewed.IsZero() {
		l.Age = now.Sub(r.Renewed).Round(time.Millisecond)
	}
	switch {
	case r.Forced:
		l.State = StateForced
	case r.Released:
		l.State = StateReleased
	case !r.Renewed.IsZero() && l.Age > lease.StaleAfter(r.TTL):
		l.State = StateStale
	default:
		l.State = StateHeld
	}
	return l
}

func (h *Handler) locks(r *http.Request) (any, error) {
	ps, err := pubParams(r, "prefix", "from", "bucket")
	if err != nil {
		return nil, err
	}
	prefix, from, bucket := ps[0], ps[1], ps[2]
	sortBy, _ := param(r, "sort")
	now := h.o.Now()
	out := Locks{Prefix: prefix, Sort: sortBy, Bucket: bucket, Locks: []Lock{}}
	if bucket != "" {
		err = h.s3Locks(&out, from, now)
	} else {
		err = h.o.Engine.View(func(tx *engine.Tx) error {
			h.kvLocks(tx, &out, from, now)
			return nil
		})
	}
	if sortBy == "age" {
		sort.SliceStable(out.Locks, func(i, j int) bool { return out.Locks[i].Age > out.Locks[j].Age })
	}
	return out, err
}

// kvLocks reads the lease records and Consul locks among one page of the
// KV key space under out.Prefix.
func (h *Handler) kvLocks(tx *engine.Tx, out *Locks, from string, now time.Time) {
	src := kvSource{tx}
	// A record that cannot be decoded ends the page early; the console
	// shows what it read.
	_ = consulmodel.Scan(tx, out.Prefix, from, func(kv consulmodel.KV) bool {
		if out.Scanned >= h.o.PageSize {
			out.Next = kv.Key
			return false
		}
		out.Scanned++
		if rec, ok := asLease(kv.Key, kv.Value); ok {
			l := leaseLock(kv, rec, now)
			l.Queue, _ = queueLength(src, kv.Key)
			out.Locks = append(out.Locks, l)
			return true
		}
		if kv.Session == "" && kv.LockIndex == 0 {
			return true
		}
		l := Lock{Key: kv.Key, Kind: "consul", Token: kv.LockIndex, Session: kv.Session, Modify: kv.ModifyIndex}
		switch s, ok := consulmodel.ConsoleSession(tx, kv.Session, 0); {
		case kv.Session == "":
			l.State = StateReleased
		case !ok:
			l.State = StateStale // a holder session that no longer exists
		default:
			l.State, l.TTL = StateHeld, s.TTL
			l.Holder = strings.TrimSpace(s.Name + " @ " + s.Node)
		}
		out.Locks = append(out.Locks, l)
		return true
	})
}

// queueLength is how many wait in the queue of the lease record at key
// (package lease, QueueKey). The store that wrote the record may have had
// a key prefix of its own (consul://HOST/team keeps lease "jobs/a" at
// "team/jobs/a" and its queue at "team/.latchkey/lease-queue/jobs/a"), so
// the queue is looked for after each "/" of key, the longest store prefix
// first: at most one read per level of key.
func queueLength(src pubSource, key string) (int, error) {
	for i := len(key) - 1; i >= 0; i-- {
		if i > 0 && key[i-1] != '/' {
			continue
		}
		qk := key[:i] + lease.QueueKey(key[i:])
		v, _, ok, err := src.get(qk, maxRecord)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		if q, err := lease.ParseQueue(key[i:], v); err == nil {
			return len(q.Tickets), nil
		}
	}
	return 0, nil
}

// s3Locks reads the lease records among the current objects of one page
// of out.Bucket (an s3:// store on this server): each small object is
// read as GET serves it (decrypted when sealed).
func (h *Handler) s3Locks(out *Locks, from string, now time.Time) error {
	var vs []s3api.ObjectVersion
	var more bool
	var src pubSource
	err := h.o.Engine.View(func(tx *engine.Tx) (err error) {
		if src, err = h.source(tx, out.Bucket); err != nil {
			return err
		}
		vs, more = s3api.ConsoleVersions(tx, out.Bucket, out.Prefix, from, h.o.PageSize)
		return nil
	})
	if err != nil {
		return err
	}
	for _, v := range vs {
		if !v.Latest {
			continue
		}
		out.Scanned++
		if v.DeleteMarker || v.Size > maxRecord {
			continue
		}
		body, idx, ok, err := src.get(v.Key, maxRecord)
		if err != nil || !ok {
			continue // replaced or removed since the listing
		}
		if rec, ok := asLease(v.Key, stripS3StoreHeader(body)); ok {
			l := leaseLock(consulmodel.KV{Key: v.Key, ModifyIndex: idx}, rec, now)
			l.Queue, _ = queueLength(src, v.Key)
			out.Locks = append(out.Locks, l)
		}
	}
	if more && len(vs) > 0 {
		out.Next = vs[len(vs)-1].Key
	}
	return nil
}

// stripS3StoreHeader drops the line an s3:// store (package s3store) put
// in front of every value before its current format:
// "latchkey-s3store-v1 <nonce>\n".
func stripS3StoreHeader(b []byte) []byte {
	if bytes.HasPrefix(b, []byte("latchkey-s3store-")) {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < 128 {
			return b[i+1:]
		}
	}
	return b
}

// Sessions is the sessions page.
type Sessions struct {
	Sessions []consulmodel.SessionInfo `json:"sessions"`
	Next     string                    `json:"next,omitempty"`
}

// expiries fills in each TTL session's time to expiry from the Consul
// API's timers.
func (h *Handler) expiries(ss []consulmodel.SessionInfo) {
	if h.o.SessionExpiry == nil {
		return
	}
	now := h.o.Now()
	for i := range ss {
		if at, ok := h.o.SessionExpiry(ss[i].ID); ok {
			ss[i].ExpiresIn = max(at.Sub(now), time.Nanosecond)
		}
	}
}

// heldLimit is how many held keys a session row lists.
const heldLimit = 20

func (h *Handler) sessions(r *http.Request) (any, error) {
	after, err := param(r, "after")
	if err != nil {
		return nil, err
	}
	var out Sessions
	err = h.o.Engine.View(func(tx *engine.Tx) error {
		var more bool
		out.Sessions, more = consulmodel.ConsoleSessions(tx, after, h.o.PageSize, heldLimit)
		h.expiries(out.Sessions)
		if more && len(out.Sessions) > 0 {
			out.Next = out.Sessions[len(out.Sessions)-1].ID
		}
		return nil
	})
	if out.Sessions == nil {
		out.Sessions = []consulmodel.SessionInfo{}
	}
	return out, err
}

// KVEntry is one child of a KV folder: a key or a folder (ending in "/").
type KVEntry struct {
	Key    string `json:"key"`
	Name   string `json:"name"` // the part after the folder
	Folder bool   `json:"folder,omitempty"`
	Size   int    `json:"size,omitempty"`
	Modify uint64 `json:"modify_index,omitempty"`
	Locked bool   `json:"locked,omitempty"`
}

// KVFolder is the KV browser at one folder.
type KVFolder struct {
	Prefix  string    `json:"prefix"`
	Parents []KVEntry `json:"parents"` // breadcrumbs, root first
	Entries []KVEntry `json:"entries"`
	Next    string    `json:"next,omitempty"`
}

// maxShown is how much of a value the KV page shows; the rest is a
// download.
const maxShown = 64 << 10

// KVValue is the KV browser at one key.
type KVValue struct {
	Key         string    `json:"key"`
	Parents     []KVEntry `json:"parents"`
	Size        int       `json:"size"`
	Flags       uint64    `json:"flags"`
	CreateIndex uint64    `json:"create_index"`
	ModifyIndex uint64    `json:"modify_index"`
	LockIndex   uint64    `json:"lock_index"`
	Session     string    `json:"session,omitempty"`
	// Kind is how Shown renders the value: "text", "json" or "hex".
	Kind      string `json:"kind"`
	Shown     string `json:"shown"`
	Truncated bool   `json:"truncated,omitempty"`
	// CLI and Curl are the equivalent commands.
	CLI  string `json:"cli"`
	Curl string `json:"curl"`
}

// KV is either a folder or a key.
type KV struct {
	Folder *KVFolder `json:"folder,omitempty"`
	Value  *KVValue  `json:"value,omitempty"`
}

func parents(key string) []KVEntry {
	out := []KVEntry{{Key: "", Name: "(root)", Folder: true}}
	for i := 0; i < len(key); i++ {
		if key[i] == '/' && i+1 < len(key) {
			p := key[:i+1]
			out = append(out, KVEntry{Key: p, Name: p[strings.LastIndexByte(p[:len(p)-1], '/')+1:], Folder: true})
		}
	}
	return out
}

func (h *Handler) kv(r *http.Request) (any, error) {
	if r.URL.Query().Has("key") {
		key, err := param(r, "key")
		if err != nil {
			return nil, err
		}
		return h.kvValue(r, key)
	}
	prefix, err := param(r, "prefix")
	if err != nil {
		return nil, err
	}
	from, err := param(r, "from")
	if err != nil {
		return nil, err
	}
	f := &KVFolder{Prefix: prefix, Parents: parents(prefix), Entries: []KVEntry{}}
	err = h.o.Engine.View(func(tx *engine.Tx) error {
		f.Entries, f.Next = listFolder(tx, prefix, from, h.o.PageSize)
		return nil
	})
	return KV{Folder: f}, err
}

// listFolder lists the children of folder prefix from the key from on: at
// most limit entries, each folder counted once (its keys are skipped by
// seeking past them), and the key the next page starts at.
func listFolder(tx *engine.Tx, prefix, from string, limit int) (entries []KVEntry, next string) {
	start := max(from, prefix)
	for start != "" || prefix == "" {
		if len(entries) >= limit {
			_ = consulmodel.Scan(tx, prefix, start, func(kv consulmodel.KV) bool { next = kv.Key; return false })
			return entries, next
		}
		seek := ""
		_ = consulmodel.Scan(tx, prefix, start, func(kv consulmodel.KV) bool { // an undecodable record ends the listing
			rest := kv.Key[len(prefix):]
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				folder := prefix + rest[:i+1]
				entries = append(entries, KVEntry{Key: folder, Name: rest[:i+1], Folder: true})
				seek = keyrange.PrefixEnd(folder)
				return false
			}
			entries = append(entries, KVEntry{Key: kv.Key, Name: rest, Size: len(kv.Value), Modify: kv.ModifyIndex, Locked: kv.Session != ""})
			if len(entries) >= limit {
				seek = kv.Key + "\x00"
				return false
			}
			return true
		})
		if seek == "" {
			return entries, ""
		}
		start = seek
	}
	return entries, ""
}

// valueKind says how to show v: pretty JSON, text, or a hex dump.
func valueKind(v []byte) string {
	if len(v) == 0 {
		return "text"
	}
	t := bytes.TrimSpace(v)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		return "json"
	}
	if !utf8.Valid(v) {
		return "hex"
	}
	for _, r := range string(v) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f || r == utf8.RuneError {
			return "hex"
		}
	}
	return "text"
}

func hexDump(v []byte) string {
	const hexd = "0123456789abcdef"
	var b strings.Builder
	for off := 0; off < len(v); off += 16 {
		line := v[off:min(off+16, len(v))]
		for s := 28; s >= 0; s -= 4 {
			b.WriteByte(hexd[(off>>s)&0xf])
		}
		b.WriteString("  ")
		for i := 0; i < 16; i++ {
			if i < len(line) {
				b.WriteByte(hexd[line[i]>>4])
				b.WriteByte(hexd[line[i]&0xf])
			} else {
				b.WriteString("  ")
			}
			b.WriteByte(' ')
			if i == 7 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(" |")
		for _, c := range line {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			b.WriteByte(c)
		}
		b.WriteString("|\n")
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// escapeKeyPath escapes a key for a /v1/kv/ URL path, keeping '/'.
func escapeKeyPath(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(urlPathEscape(s), "+", "%2B")
	}
	return strings.Join(segs, "/")
}

// kvGet reads one Consul key in a read transaction of its own.
func (h *Handler) kvGet(key string) (kv consulmodel.KV, ok bool, err error) {
	err = h.o.Engine.View(func(tx *engine.Tx) error {
		kv, ok, err = consulmodel.Get(tx, key)
		return err
	})
	return kv, ok, err
}

func (h *Handler) kvValue(r *http.Request, key string) (any, error) {
	kv, ok, err := h.kvGet(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotFoundf("no key %q", key)
	}
	v := &KVValue{Key: key, Parents: parents(key), Size: len(kv.Value), Flags: kv.Flags,
		CreateIndex: kv.CreateIndex, ModifyIndex: kv.ModifyIndex, LockIndex: kv.LockIndex, Session: kv.Session}
	shown := kv.Value
	if len(shown) > maxShown {
		shown, v.Truncated = shown[:maxShown], true
	}
	v.Kind = valueKind(kv.Value)
	if v.Truncated && v.Kind == "json" {
		v.Kind = valueKind(shown)
	}
	switch v.Kind {
	case "json":
		var b bytes.Buffer
		if json.Indent(&b, bytes.TrimSpace(shown), "", "  ") == nil {
			v.Shown = b.String()
		} else {
			v.Kind, v.Shown = "text", string(shown)
		}
	case "hex":
		v.Shown = hexDump(shown)
	default:
		v.Shown = string(shown)
	}
	host := r.Host
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	tok := ""
	if h.o.ACLToken != "" {
		tok = ` -H "X-Consul-Token: $LATCHKEY_ACL_TOKEN"`
	}
	v.CLI = "latchkey kv --store " + shellQuote("consul://"+host) + " get -detailed " + shellQuote(key)
	v.Curl = "curl -s" + tok + " " + shellQuote(scheme+"://"+host+"/v1/kv/"+escapeKeyPath(key))
	return KV{Value: v}, nil
}

// kvRaw serves a key's whole value as a download.
func (h *Handler) kvRaw(w http.ResponseWriter, r *http.Request) {
	key, err := param(r, "key")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	kv, ok, err := h.kvGet(key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if !ok {
		http.Error(w, "no such key", http.StatusNotFound)
		return
	}
	name := key[strings.LastIndexByte(key, '/')+1:]
	if name == "" {
		name = "value"
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)+`"`)
	w.Header().Set("X-Consul-Index", itoa(kv.ModifyIndex))
	if r.Method != http.MethodHead {
		w.Write(kv.Value)
	}
}
