package cas

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// The waiting line: contenders of one key in different processes are
// served roughly in arrival order.
//
// Turns (turns.go) order the Updates of one process; nothing orders those
// of different processes but the race itself, and the race favours
// whoever has just won: its next Update reads at once while the others
// sleep backoffs that grew with every loss. Measured on fake time (64
// processes, one key, a 1 ms round trip; TestUpdateIsFairAcrossProcesses):
// p50 11 ms but p99 1.0 s, and the slowest process did a quarter of the
// mean share.
//
// So an Update that has lost lineAfter races takes a ticket: it creates
// (IfAbsent) a small record of its own under LinePrefix(key), named by a
// sequence number one past the last ticket it listed there and a random
// id, so that a listing (store order) is the line. Only the first
// lineWindow live tickets race for the key; the others list the line now
// and then, each less often the further back it is, until they reach the
// front. Where the store can watch a key (store.Watcher: Consul and
// latchkey serve, etcd, memstore, filestore with inotify), a ticket
// behind the window instead waits on the ticket whose departure brings it
// there (ZooKeeper's lock recipe, with a window): one departure wakes one
// waiter, and a wait costs one watch however long it lasts (watchLine).
// A ticket is deleted when its Update ends, however it ends. An
// Update whose process has just left others in the line (its last Update
// did, within lineMemoryTTL) takes its ticket before its first attempt: the
// winner goes behind the losers instead of in front of them. An Update
// that wins at once, on a key whose line this process has not seen
// lately, sends exactly what it sent before: one read and one write;
// only a few wins at once of a run of them also list the line
// (checkLine), since a process that never loses never learns of the line
// otherwise.
//
// Tickets are records of their own, not entries of one shared record, so
// that taking and leaving a place never races anyone: with 64 processes
// writing one line record, that record became the hot key (83 updates/s
// where one process alone does 500). Two Updates that list the line at
// the same moment may take the same number; their ids order them.
//
// The line never decides who writes: every write of the key is still
// conditional on the version read, so tickets that are lost, deleted,
// stale or ignored change who goes first, never the outcome. A ticket
// whose process died (or whose Update hangs) is taken for gone by each
// waiter that has seen it among the front lineWindow for lineTicketTTL
// MaxDelays on its own monotonic clock: it stops counting, and that waiter
// deletes it. A live Update whose ticket was deleted takes a new one, in
// the same place. While a dead ticket stands at the front the others of
// the window still race, so it slows the line down but never stops it.
//
// Keys under ".latchkey/" (the records of lease and of this line) have no
// line: they have orders of their own. A failure to list or write the
// line (an outage, a store that refuses the names) sends the Update on
// without it, as before. The line costs requests only under contention: a
// listing and a create to take a ticket, a delete to leave, and a few
// listings (or one watch) while waiting. Under heavy contention every
// Update waits, so
// each costs two writes more than its own (about 10 requests per update
// at 64 processes on fake time, where the free-for-all sent 8): on a
// store whose writes are dear (latchkey serve and etcd fsync each commit
// round) that is the price of the order. The waits are bounded: the
// tickets ahead of one are finite, and each is served or taken for gone. Tickets of processes that died on a key nobody
// contends again stay behind until the next contention removes them.
const (
	linePrefix = ".latchkey/cas-line/"
	// lineAfter is how many races an Update loses before it takes a
	// ticket.
	lineAfter = 2
	// lineWindow is how many tickets at the front race for the key.
	lineWindow = 3
	// lineDelayAttempts is the ceiling of the backoff of a ticket of the
	// window, in attempts (see lineDelay).
	lineDelayAttempts = 2
	// lineListLimit bounds the tickets one listing reads: a ticket further
	// back only learns that it is far back.
	lineListLimit = 256
	// lineMemoryTTL is how long a process remembers that it left others
	// in a key's line.
	lineMemoryTTL = time.Second
	// lineTicketTTL, in MaxDelays, is how long a ticket may stand at the
	// front before the others take it for gone (1 s by default).
	lineTicketTTL = 4
	// lineCheckFirst and lineCheckMax bound how often, in Updates that
	// won at once in a run (each within lineMemoryTTL of the last), a
	// process looks at the line of a key it keeps winning: at the
	// lineCheckFirst-th win, and after each look that found nobody waiting
	// twice as many wins later, up to lineCheckMax.
	lineCheckFirst = 8
	lineCheckMax   = 256
	// lineLeaveMaxDelays bounds, in MaxDelays, how long an Update that is
	// over spends deleting its ticket, whatever ctx says (a ticket left
	// behind costs the others lineTicketTTL).
	lineLeaveMaxDelays = 4
)

// LinePrefix returns the prefix under which the tickets of key's waiting
// line are stored (see Update): a digest of the key, so that no key's
// line lists another's. Each ticket holds {"key": key}, for people and
// tools. Deleting tickets is harmless: their Updates take new ones.
func LinePrefix(key string) string {
	sum := sha256.Sum256([]byte(key))
	return linePrefix + hex.EncodeToString(sum[:16]) + "/"
}

// waiting is what an Update in a line knows of it.
type waiting struct {
	prefix string
	ttl    time.Duration // lineTicketTTL MaxDelays
	me     string        // our ticket's key; "" before the first
	seq    uint64        // its number
	sent   bool          // a create of a ticket was sent: one may be in the line
	items  []string      // the tickets as last listed (with ours once created)
	more   bool          // the listing was cut at lineListLimit
	// versions holds the versions of the tickets as last listed, for
	// watching one (watchLine).
	versions map[string]store.Version
	// front holds when each ticket was first seen among the front
	// lineWindow live ones: seen there for ttl, it is gone; deleted are
	// those we deleted for it.
	front   map[string]time.Time
	deleted map[string]bool
	// attempt is how long an attempt of the key took lately: the pace of
	// the line, at most (0: not known yet).
	attempt time.Duration
}

// lined reports whether u may use a line.
func (u *updater) lined() bool {
	return !u.unlined && !strings.HasPrefix(u.key, ".latchkey/")
}

// lineFirst reports whether u should take a ticket before its first
// attempt: this process left others in the line lately.
func (u *updater) lineFirst() bool {
	if !u.lined() {
		return false
	}
	seen, attempt := lineSeen(u.s, u.key, now())
	if seen {
		u.newWaiting().attempt = attempt
	}
	return seen
}

// newWaiting returns u.w, made on first use.
func (u *updater) newWaiting() *waiting {
	if u.w == nil {
		u.w = &waiting{prefix: LinePrefix(u.key), ttl: lineTicketTTL * u.o.MaxDelay,
			front: map[string]time.Time{}, deleted: map[string]bool{}}
	}
	return u.w
}

// joinLine takes a ticket (or a new one in the same place, after ours was
// deleted). It returns an error only when ctx ended; other failures send
// u on without the line.
func (u *updater) joinLine(ctx context.Context) error {
	w := u.newWaiting()
	if w.seq == 0 {
		if err := u.listLine(ctx); err != nil || u.unlined {
			return err
		}
		w.seq = 1
		if n := len(w.items); n > 0 {
			w.seq = ticketSeq(w.prefix, w.items[n-1]) + 1
		}
	}
	body, _ := json.Marshal(struct {
		Key string `json:"key"`
	}{u.key})
	me := fmt.Sprintf("%s%020d-%s", w.prefix, w.seq, rand.Text())
	w.sent = true
	_, err := u.s.Put(ctx, me, body, store.IfAbsent)
	if err != nil {
		return u.lineFailed(ctx, err)
	}
	w.me = me
	i, _ := slices.BinarySearch(w.items, me)
	w.items = slices.Insert(slices.DeleteFunc(w.items, func(k string) bool { return k == me }), i, me)
	w.saw(w.items, now())
	return nil
}

// ticketSeq returns the number in the ticket name k (0 if none).
func ticketSeq(prefix, k string) uint64 {
	n, _, _ := strings.Cut(strings.TrimPrefix(k, prefix), "-")
	seq, _ := strconv.ParseUint(n, 10, 64)
	return seq
}

// lineFailed takes the failure of an operation on the line: ctx's cause
// when ctx ended, and otherwise nil, having sent u on without the line.
func (u *updater) lineFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return u.errorf("%w", context.Cause(ctx))
	}
	u.unlined = true
	return nil
}

// listLine lists the line into u.w, and deletes the tickets it takes for
// gone.
func (u *updater) listLine(ctx context.Context) error {
	w := u.w
	page, err := u.s.List(ctx, w.prefix, &store.ListOptions{Limit: lineListLimit})
	if err != nil {
		return u.lineFailed(ctx, err)
	}
	items := make([]string, 0, len(page.Items))
	w.versions = make(map[string]store.Version, len(page.Items))
	for _, it := range page.Items {
		items = append(items, it.Key)
		w.versions[it.Key] = it.Version
	}
	w.more = page.Next != ""
	t := now()
	w.saw(items, t)
	for _, k := range w.items {
		if k != w.me && w.gone(k, t) && !w.deleted[k] {
			w.deleted[k] = true
			// Unconditional: a ticket is written once, by its Update.
			if err := u.s.Delete(ctx, k, store.Unconditional); err != nil && ctx.Err() != nil {
				return u.errorf("%w", context.Cause(ctx))
			}
		}
	}
	return nil
}

// leaveLine deletes u's ticket, if one may be in the line, and remembers
// whether others were left in it. It spends at most lineLeaveMaxDelays
// MaxDelays, even after ctx ended.
func (u *updater) leaveLine(ctx context.Context) {
	w := u.w
	if w == nil || !w.sent {
		return
	}
	others := slices.ContainsFunc(w.items, func(k string) bool { return k != w.me && !w.gone(k, now()) })
	if others {
		sawLine(u.s, u.key, now(), u.attempt)
	} else {
		forgetLine(u.s, u.key)
	}
	if w.me == "" {
		return // a create of unknown outcome: the others will take it for gone
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lineLeaveMaxDelays*u.o.MaxDelay)
	defer cancel()
	u.s.Delete(ctx, w.me, store.Unconditional) // left behind, the others take it for gone
}

// waitInLine returns once u may race for the key: it holds no ticket, or
// its ticket is among the first lineWindow live ones. It returns an error
// only when ctx ended or Timeout passed (errTimeout).
func (u *updater) waitInLine(ctx context.Context) error {
	for u.w != nil && !u.unlined {
		w := u.w
		i := w.place(now())
		if i < 0 {
			if err := u.joinLine(ctx); err != nil {
				return err
			}
			continue
		}
		if i < lineWindow {
			return nil
		}
		watched, err := u.watchLine(ctx, i)
		if err != nil {
			return err
		}
		if watched {
			continue
		}
		if err := u.pause(ctx, w.delay(i, u.lineAttempt(), u.o.MaxDelay)); err != nil {
			return err
		}
		if err := u.listLine(ctx); err != nil {
			return err
		}
	}
	return nil
}

// watchLine waits for the line to move, on a store with a native watch
// (store.Watcher, and Capabilities.Watch), for u at place i behind the
// window: it waits on the live ticket at place i-lineWindow, the last
// that must leave for u to reach the window, until it is deleted (a
// ticket is written once, so any change is its deletion). Then u takes
// the tickets ahead of it for gone too (the window races before it, so
// they mostly are) and is in the window, without a listing: if some are
// still there, one more ticket races for a while. One departure wakes one
// waiter, where the timed listings (delay) woke each waiter a few times
// per place it moved, and more when the line moved slower than one place
// per attempt: on latchkey serve on a busy 2-core machine (bench
// --update-procs, 64 processes) 12 listings per update, 20 requests in
// all, against 12 requests with the watch, and 3× the updates/s (then
// a consulstore watch was three requests; now two, a read and a blocking
// query from its index: 10.3–10.6 requests per update). A watch lasts at most lineTicketTTL MaxDelays plus the time
// the line would take to bring u to the window at one place per attempt;
// then u lists the line as the timed wait does, so that dead tickets are
// taken for gone and deleted, and a watch that never answers costs only
// time. A watch that returns early, with no deletion, sends u to the
// window early; one that fails sends it to the timed wait for this turn.
// It reports whether it waited; it returns errTimeout when
// Options.Timeout passes and ctx's cause when ctx ends.
func (u *updater) watchLine(ctx context.Context, i int) (bool, error) {
	if !u.watches() {
		return false, nil
	}
	w := u.w
	k := w.live(i-lineWindow, now())
	v := w.versions[k]
	if v == "" {
		return false, nil
	}
	bound := w.ttl + time.Duration(i-lineWindow+1)*u.lineAttempt()
	dl := u.deadline()
	if !dl.IsZero() {
		left := dl.Sub(now())
		if left <= 0 {
			return false, errTimeout
		}
		bound = min(bound, left)
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	err := u.s.(store.Watcher).WaitChange(wctx, k, v)
	cancel()
	switch {
	case ctx.Err() != nil:
		return false, u.errorf("%w", context.Cause(ctx))
	case err != nil && wctx.Err() == nil:
		return false, nil
	case !dl.IsZero() && !now().Before(dl):
		return false, errTimeout
	case err == nil:
		w.items = w.items[slices.Index(w.items, k)+1:]
		w.saw(w.items, now())
		return true, nil
	}
	return true, u.listLine(ctx)
}

// lineAttempt is how long an attempt of the key takes: the last of u's,
// else the one this process remembers with the key's line, at least a
// quarter of BaseDelay (so that a store that answers at once is not
// polled in a loop). It is the time scale of the line: on a server that
// answers in a millisecond, waits of BaseDelay would leave the key idle.
func (u *updater) lineAttempt() time.Duration {
	a := u.attempt
	if a == 0 {
		a = u.w.attempt
	}
	return max(a, u.o.BaseDelay/4)
}

// lineDelay is how long a ticket of the window waits after a lost race
// before it reads the key again. A lost race means a write has just
// landed, so the head reads again almost at once (a draw under half an
// attempt); the others of the window draw under lineDelayAttempts
// attempts (at most MaxDelay), so that the head mostly wins. Neither
// grows with the races lost: the window is a few tickets, not a crowd to
// spread.
func (u *updater) lineDelay() time.Duration {
	c := u.lineAttempt() / 2
	if u.w.place(now()) > 0 {
		c = min(lineDelayAttempts*u.lineAttempt(), u.o.MaxDelay)
	}
	return backoff.Policy{Base: c, Max: c}.Delay(1)
}

// saw records items, the line listed (or written) at t, and which
// tickets came to the front.
func (w *waiting) saw(items []string, t time.Time) {
	w.items = items
	var ahead []string
	for _, k := range items {
		if k == w.me {
			break
		}
		ahead = append(ahead, k)
	}
	live := 0
	for _, k := range ahead {
		if live >= lineWindow {
			break
		}
		if _, ok := w.front[k]; !ok {
			w.front[k] = t
		}
		if !w.gone(k, t) {
			live++
		}
	}
}

// gone reports whether the ticket k has stood at the front for ttl by t.
func (w *waiting) gone(k string, t time.Time) bool {
	at, ok := w.front[k]
	return ok && t.Sub(at) >= w.ttl
}

// place returns our place among the live tickets of the line as last
// seen (0: the head), or -1 when our ticket is not in it.
func (w *waiting) place(t time.Time) int {
	i := 0
	for _, k := range w.items {
		if k == w.me {
			return i
		}
		if !w.gone(k, t) {
			i++
		}
	}
	if w.more {
		return i // further back than one listing reaches
	}
	return -1
}

// live returns the live ticket at place j of the line as last seen ("" if
// none).
func (w *waiting) live(j int, t time.Time) string {
	for _, k := range w.items {
		if k == w.me {
			break
		}
		if w.gone(k, t) {
			continue
		}
		if j == 0 {
			return k
		}
		j--
	}
	return ""
}

// delay is how long a ticket at place i, behind the window, waits before
// it lists the line again: 80–100% of the time the line would take to
// bring it to the window if each of its places took one attempt (the
// quickest it moves: one update per read and write), at least half an
// attempt and at most lineTicketTTL MaxDelays. Each listing is a request
// the store serves beside the updates, and the waiters behind the window
// are most of the line: a draw around three quarters of that time (as
// before) made a ticket list the line about 1/0.75 × ln(its place) times,
// and, capped at one MaxDelay, made the far end of a long line list it
// every MaxDelay. Measured on latchkey serve (tests/casbench, separate
// clients): 3.9 → 2.8–3.0 listings per update at 8 clients; on fake time
// (TestUpdateIsFairAcrossProcesses) 2.7 → 2.3 at 8 processes and 4.3 →
// 3.7 at 64, at the same rate and order. (All of the time, jittered
// either way: 9.3 requests per update at 64 processes on fake time, but
// half the draws came late, the window emptied and the rate fell to 78%;
// 80–100% is early by a little, never late.) Timing the reads by the
// pace the line was seen to move instead is circular: a line whose window
// emptied while its next tickets slept moves slowly, and then they sleep
// longer (measured: 64 processes on fake time fell to 38% of the rate).
func (w *waiting) delay(i int, attempt, maxDelay time.Duration) time.Duration {
	full := time.Duration(i-lineWindow+1) * attempt
	d := backoff.Between(full*4/5, full)
	return min(max(d, attempt/2), lineTicketTTL*maxDelay)
}

// checkLine is called after u won at its first attempt without a ticket.
// At the lineCheckFirst-th such win of a run (see wonAtOnce), and then
// at twice as many wins after each look that found the line empty, it
// lists the line, and when others wait there it remembers them, so that
// the next Update of the key takes a ticket behind them (and the next
// look comes lineCheckFirst wins later). A process that wins at once
// never loses a race, so without this it never learns of the line: a
// process near the store (or with a quicker loop) that reads right after
// its own write captured the key while the others waited in the line
// (TestANearProcessDoesNotCaptureTheKey: all 15,000 updates in 3 s, the
// others none). The looks cost a request each, only to a process that
// updates the key again and again, and fewer as its run goes on
// uncontended: 7 in its first 1,000 Updates, then one in 256. An Update
// more than lineMemoryTTL after the last one of its key starts a new run.
func (u *updater) checkLine(ctx context.Context) {
	if !u.lined() || !wonAtOnce(u.s, u.key, now()) {
		return
	}
	w := u.newWaiting()
	if u.listLine(ctx) != nil || u.unlined {
		return
	}
	others := len(w.items) > 0
	if others {
		sawLine(u.s, u.key, now(), u.attempt)
	}
	lineChecked(u.s, u.key, others)
}

// A run of Updates of one key won at once, per store value: a small fixed
// table like the line memory's. n counts the wins since the last look at
// the line, every is how many wins the next look waits for.
type runEntry struct {
	s        store.Store
	key      string
	n, every int
	at       time.Time
}

var runs [memorySlots]atomic.Pointer[runEntry]

func runSlot(key string) *atomic.Pointer[runEntry] {
	return &runs[maphash.String(memorySeed, key)%memorySlots]
}

// wonAtOnce counts a win at once of key on s at t and reports whether
// the line should be looked at now. (Two Updates of one process counting
// at once may lose a count; that only delays a look.)
func wonAtOnce(s store.Store, key string, t time.Time) bool {
	if !remembers(s) {
		return false
	}
	slot := runSlot(key)
	r := runEntry{s: s, key: key, n: 1, every: lineCheckFirst, at: t}
	if m := slot.Load(); m != nil && m.s == s && m.key == key {
		if age := t.Sub(m.at); age >= 0 && age < lineMemoryTTL {
			r.n, r.every = m.n+1, m.every
		}
	}
	look := r.n >= r.every
	if look {
		r.n = 0
	}
	slot.Store(&r)
	return look
}

// lineChecked records what a look at the line of key on s found: others
// waiting bring the next look back to lineCheckFirst wins, an empty line
// sends it twice as far, up to lineCheckMax.
func lineChecked(s store.Store, key string, others bool) {
	slot := runSlot(key)
	m := slot.Load()
	if m == nil || m.s != s || m.key != key {
		return
	}
	r := *m
	r.every = min(2*r.every, lineCheckMax)
	if others {
		r.every = lineCheckFirst
	}
	slot.Store(&r)
}

// The line memory: the keys whose line this process left others in,
// lately, per store value. A small fixed table, like the contention
// memory (contention.go).
type lineEntry struct {
	s       store.Store
	key     string
	at      time.Time
	attempt time.Duration // how long the last attempt of the key took
}

var lines [memorySlots]atomic.Pointer[lineEntry]

func lineSlot(key string) *atomic.Pointer[lineEntry] {
	return &lines[maphash.String(memorySeed, key)%memorySlots]
}

// lineSeen reports whether this process left others in the line of key
// on s within lineMemoryTTL before t, and how long an attempt took then.
func lineSeen(s store.Store, key string, t time.Time) (bool, time.Duration) {
	m := lineSlot(key).Load()
	if m == nil || m.s != s || m.key != key {
		return false, 0
	}
	age := t.Sub(m.at)
	return age >= 0 && age < lineMemoryTTL, m.attempt
}

// sawLine records that this process left others in the line of key on s
// at t, after an attempt that took attempt.
func sawLine(s store.Store, key string, t time.Time, attempt time.Duration) {
	if remembers(s) {
		lineSlot(key).Store(&lineEntry{s: s, key: key, at: t, attempt: attempt})
	}
}

// forgetLine forgets the line of key on s.
func forgetLine(s store.Store, key string) {
	slot := lineSlot(key)
	if m := slot.Load(); m != nil && m.s == s && m.key == key {
		slot.CompareAndSwap(m, nil)
	}
}

// watches reports whether u's store can watch a key (watchLine).
func (u *updater) watches() bool {
	_, ok := u.s.(store.Watcher)
	return ok && u.caps.Watch
}
