package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/internal/crashtest"
)

// crashRoundsEnv sets how many crash rounds TestCrashRounds runs
// (default 5, which CI runs).
const crashRoundsEnv = "LATCHKEY_CRASH_ROUNDS"

// The registers of the crash load. Each is written with values unique in
// the whole run.
const (
	regTxn  = "txn"  // t/a and t/b, written together by /v1/txn: "a|b"
	regLock = "lock" // the holder session of kv key "lock"
	regObj  = "s3/o" // S3 object bkt/o, conditional PUT and DELETE
	regMP   = "s3/mp"
)

var casKeys = []string{"kv/c0", "kv/c1"}

// Crash rounds: the real server process under a mixed load (Consul KV
// CAS, /v1/txn CAS, sessions acquiring and releasing a lock, S3
// conditional PUT and DELETE, multipart Complete) is killed with SIGKILL at
// a random moment, restarted on the same directory and read back, round
// after round. After each round: no write answered "refused" is ever
// read, X-Consul-Index has not gone backwards, and the whole history
// across restarts (acknowledged writes, refusals, unknown outcomes as
// "may have happened", and the reads after each restart) is
// linearizable — so every acknowledged write is there.
func TestCrashRounds(t *testing.T) {
	rounds := 5
	if s := os.Getenv(crashRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", crashRoundsEnv, s)
		}
		rounds = n
	}
	start := time.Now()
	dir := t.TempDir()
	l := &crashLoad{h: &crashtest.History{}, refused: map[string]bool{}}
	p := crashServer(t, dir)
	l.setup(t, p.URL)
	for round := range rounds {
		l.round(p.URL, round)
		p.Kill()
		dead := time.Now()
		l.stop.Store(true)
		l.wg.Wait()
		l.h.Crashed(dead)
		p = crashServer(t, dir)
		l.readBack(t, p.URL, round)
		if err := crashtest.Check(l.h.Ops(), time.Minute); err != nil {
			t.Fatalf("after round %d: %v", round, err)
		}
		c := l.h.Counts()
		t.Logf("round %d: %d ops (%d reads; writes: %d acknowledged, %d refused, %d aborted, %d unknown), max index %d",
			round, c.Ops, c.Reads, c.Done, c.Refused, c.Aborted, c.Unknown, l.maxIndex.Load())
	}
	c := l.h.Counts()
	if c.Done == 0 || c.Refused == 0 || c.Unknown == 0 {
		t.Errorf("the load did not exercise every outcome: %+v", c)
	}
	t.Logf("crash rounds: %d rounds, %d ops, %d writes acknowledged, %d refused, %d aborted (409), %d unknown, %d reads, %v",
		rounds, c.Ops, c.Done, c.Refused, c.Aborted, c.Unknown, c.Reads, time.Since(start).Round(time.Millisecond))
}

func crashServer(t *testing.T, dir string) *crashtest.Process {
	t.Helper()
	return crashtest.Start(t, testutil.Child(childEnv+"=serve", childDirEnv+"="+dir, childAnonEnv+"=1"))
}

type crashLoad struct {
	h        *crashtest.History
	stop     atomic.Bool
	wg       sync.WaitGroup
	seq      atomic.Int64
	maxIndex atomic.Uint64
	mu       sync.Mutex
	refused  map[string]bool // values of refused writes: never to be read
	sessions []string        // every session created, to destroy after a crash
}

func (l *crashLoad) value(client int) string {
	return fmt.Sprintf("c%d-%d", client, l.seq.Add(1))
}

// record adds op (with the times) to the history.
func (l *crashLoad) record(op crashtest.Op, call time.Time) {
	op.Call, op.Return = call, time.Now()
	if op.Outcome == crashtest.Unknown {
		op.Return = time.Time{}
	}
	if !op.Read && (op.Outcome == crashtest.Refused || op.Outcome == crashtest.Aborted) {
		l.mu.Lock()
		l.refused[op.New] = true
		l.mu.Unlock()
	}
	l.h.Add(op)
}

func (l *crashLoad) seeIndex(h http.Header) {
	if n, err := strconv.ParseUint(h.Get("X-Consul-Index"), 10, 64); err == nil {
		for {
			cur := l.maxIndex.Load()
			if n <= cur || l.maxIndex.CompareAndSwap(cur, n) {
				return
			}
		}
	}
}

// do sends one request; err != nil means no answer (the outcome is
// unknown).
func do(c *http.Client, method, url string, body []byte, hdr ...string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

var errUnexpected = errors.New("unexpected answer")

func (l *crashLoad) setup(t *testing.T, base string) {
	c := &http.Client{Timeout: 10 * time.Second}
	if st, _, b, err := do(c, "PUT", base+"/bkt", nil); err != nil || st != 200 {
		t.Fatalf("create bucket: %d %s %v", st, b, err)
	}
	// /v1/txn get of a missing key fails the txn: create both keys first.
	v := l.value(-1)
	call := time.Now()
	st, _, b, err := do(c, "PUT", base+"/v1/txn", txnBody("set", v, 0, 0))
	if err != nil || st != 200 {
		t.Fatalf("txn setup: %d %s %v", st, b, err)
	}
	l.record(crashtest.Op{Key: regTxn, Always: true, New: v + "|" + v, Outcome: crashtest.Done, What: "txn set"}, call)
}

// round starts the load's clients; they run until a request gets no
// answer or l.stop. It returns after a random moment with enough answers.
func (l *crashLoad) round(base string, round int) {
	l.stop.Store(false)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	client := round * 100
	for i, k := range casKeys {
		l.worker(client+i, func(id int) bool { return l.kvCAS(c, base, k, id) })
	}
	l.worker(client+10, func(id int) bool { return l.txnCAS(c, base, id) })
	for i := range 2 {
		l.worker(client+20+i, func(id int) bool { return l.lockCycle(c, base, id) })
	}
	for i := range 2 {
		l.worker(client+30+i, func(id int) bool { return l.s3Cond(c, base, id) })
	}
	l.worker(client+40, func(id int) bool { return l.multipart(c, base, id) })
	before := l.h.Counts().Ops
	wait := time.Duration(50+rand.IntN(300)) * time.Millisecond
	for deadline := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) && l.h.Counts().Ops > before+20 {
			return
		}
	}
}

// worker runs step until it reports false (no answer) or the round stops.
func (l *crashLoad) worker(id int, step func(id int) bool) {
	l.wg.Go(func() {
		for !l.stop.Load() && step(id) {
		}
	})
}

type kvEntryS struct {
	Value       []byte
	ModifyIndex uint64
	Session     string
}

// kvRead reads key through the Consul KV API and records it on register
// reg (the value, or the holder session when session is true).
func (l *crashLoad) kvRead(c *http.Client, base, key, reg string, session bool, id int) (kvEntryS, bool) {
	call := time.Now()
	st, hdr, b, err := do(c, "GET", base+"/v1/kv/"+key, nil)
	if err != nil {
		return kvEntryS{}, false
	}
	l.seeIndex(hdr)
	var e kvEntryS
	switch st {
	case 404:
	case 200:
		var es []kvEntryS
		if json.Unmarshal(b, &es) != nil || len(es) != 1 {
			return kvEntryS{}, false
		}
		e = es[0]
	default:
		return kvEntryS{}, false
	}
	v := string(e.Value)
	if session {
		v = e.Session
	}
	l.record(crashtest.Op{Key: reg, Read: true, Value: v, Client: id}, call)
	return e, true
}

func (l *crashLoad) kvCAS(c *http.Client, base, key string, id int) bool {
	cur, ok := l.kvRead(c, base, key, key, false, id)
	if !ok {
		return false
	}
	v := l.value(id)
	op := crashtest.Op{Key: key, Expect: string(cur.Value), New: v, Client: id,
		What: fmt.Sprintf("PUT ?cas=%d", cur.ModifyIndex)}
	call := time.Now()
	st, _, b, err := do(c, "PUT", fmt.Sprintf("%s/v1/kv/%s?cas=%d", base, key, cur.ModifyIndex), []byte(v))
	op.Outcome = boolOutcome(st, b, err)
	l.record(op, call)
	return op.Outcome != crashtest.Unknown
}

func txnBody(verb, v string, ia, ib uint64) []byte {
	var ops []map[string]any
	for i, k := range []string{"t/a", "t/b"} {
		kv := map[string]any{"Verb": verb, "Key": k}
		if verb != "get" {
			kv["Value"] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		if verb == "cas" {
			kv["Index"] = []uint64{ia, ib}[i]
		}
		ops = append(ops, map[string]any{"KV": kv})
	}
	b, _ := json.Marshal(ops)
	return b
}

type txnResp struct {
	Results []struct{ KV kvEntryS }
}

// txnRead reads t/a and t/b in one /v1/txn and records it.
func (l *crashLoad) txnRead(c *http.Client, base string, id int) (a, b kvEntryS, ok bool) {
	call := time.Now()
	st, _, body, err := do(c, "PUT", base+"/v1/txn", txnBody("get", "", 0, 0))
	var r txnResp
	if err != nil || st != 200 || json.Unmarshal(body, &r) != nil || len(r.Results) != 2 {
		return a, b, false
	}
	a, b = r.Results[0].KV, r.Results[1].KV
	l.record(crashtest.Op{Key: regTxn, Read: true, Value: string(a.Value) + "|" + string(b.Value), Client: id}, call)
	return a, b, true
}

func (l *crashLoad) txnCAS(c *http.Client, base string, id int) bool {
	a, b, ok := l.txnRead(c, base, id)
	if !ok {
		return false
	}
	v := l.value(id)
	if rand.IntN(4) == 0 { // now and then a stale index: a refusal
		a.ModifyIndex--
	}
	op := crashtest.Op{Key: regTxn, Expect: string(a.Value) + "|" + string(b.Value), New: v + "|" + v, Client: id,
		What: fmt.Sprintf("txn cas %d,%d", a.ModifyIndex, b.ModifyIndex)}
	if a.ModifyIndex != b.ModifyIndex { // only a stale index makes them differ
		op.Expect = "(stale)"
	}
	call := time.Now()
	st, _, _, err := do(c, "PUT", base+"/v1/txn", txnBody("cas", v, a.ModifyIndex, b.ModifyIndex))
	switch {
	case err != nil:
		op.Outcome = crashtest.Unknown
	case st == 200:
		op.Outcome = crashtest.Done
	case st == 409:
		op.Outcome = crashtest.Refused
	default:
		op.Outcome = crashtest.Unknown
	}
	l.record(op, call)
	return err == nil
}

// lockCycle creates a session, acquires "lock" with it, and releases it.
func (l *crashLoad) lockCycle(c *http.Client, base string, id int) bool {
	st, _, b, err := do(c, "PUT", base+"/v1/session/create", []byte(`{"LockDelay":"0s"}`))
	var s struct{ ID string }
	if err != nil || st != 200 || json.Unmarshal(b, &s) != nil || s.ID == "" {
		return false
	}
	l.mu.Lock()
	l.sessions = append(l.sessions, s.ID)
	l.mu.Unlock()
	for range 5 {
		if _, ok := l.kvRead(c, base, "lock", regLock, true, id); !ok {
			return false
		}
		op := crashtest.Op{Key: regLock, Expect: "", Or: s.ID, New: s.ID, Client: id, What: "acquire"}
		call := time.Now()
		st, _, b, err := do(c, "PUT", base+"/v1/kv/lock?acquire="+s.ID, []byte(l.value(id)))
		op.Outcome = boolOutcome(st, b, err)
		l.record(op, call)
		if op.Outcome == crashtest.Unknown {
			return false
		}
		if op.Outcome == crashtest.Done {
			op := crashtest.Op{Key: regLock, Expect: s.ID, New: "", Client: id, What: "release"}
			call := time.Now()
			st, _, b, err := do(c, "PUT", base+"/v1/kv/lock?release="+s.ID, nil)
			op.Outcome = boolOutcome(st, b, err)
			l.record(op, call)
			if op.Outcome == crashtest.Unknown {
				return false
			}
		}
	}
	return true
}

// boolOutcome is the outcome of a Consul write that answers true or
// false (cas, acquire, release): anything but a 200 is unknown.
func boolOutcome(st int, b []byte, err error) crashtest.Outcome {
	switch {
	case err != nil || st != 200:
		return crashtest.Unknown
	case strings.TrimSpace(string(b)) == "true":
		return crashtest.Done
	default:
		return crashtest.Refused
	}
}

// s3Read GETs bkt/key and records it on reg; etag "" when absent.
func (l *crashLoad) s3Read(c *http.Client, base, key, reg string, id int) (val, etag string, ok bool) {
	call := time.Now()
	st, hdr, b, err := do(c, "GET", base+"/bkt/"+key, nil)
	switch {
	case err != nil:
		return "", "", false
	case st == 200:
		val, etag = string(b), hdr.Get("ETag")
	case st == 404:
	default:
		return "", "", false
	}
	l.record(crashtest.Op{Key: reg, Read: true, Value: val, Client: id}, call)
	return val, etag, true
}

func (l *crashLoad) s3Cond(c *http.Client, base string, id int) bool {
	cur, etag, ok := l.s3Read(c, base, "o", regObj, id)
	if !ok {
		return false
	}
	v := l.value(id)
	op := crashtest.Op{Key: regObj, Expect: cur, New: v, Client: id}
	var st int
	var err error
	call := time.Now()
	switch {
	case etag == "":
		op.What = "PUT If-None-Match *"
		st, _, _, err = do(c, "PUT", base+"/bkt/o", []byte(v), "If-None-Match", "*")
	case rand.IntN(3) == 0:
		op.What, op.New = "DELETE If-Match", ""
		st, _, _, err = do(c, "DELETE", base+"/bkt/o", nil, "If-Match", etag)
	default:
		op.What = "PUT If-Match"
		st, _, _, err = do(c, "PUT", base+"/bkt/o", []byte(v), "If-Match", etag)
	}
	switch {
	case err != nil:
		op.Outcome = crashtest.Unknown
	case st == 200 || st == 204:
		op.Outcome = crashtest.Done
	case st == 412 || st == 404:
		op.Outcome = crashtest.Refused
	case st == 409:
		op.Outcome = crashtest.Aborted
	default:
		op.Outcome = crashtest.Unknown
	}
	l.record(op, call)
	return err == nil
}

func (l *crashLoad) multipart(c *http.Client, base string, id int) bool {
	if _, _, ok := l.s3Read(c, base, "mp", regMP, id); !ok {
		return false
	}
	st, _, b, err := do(c, "POST", base+"/bkt/mp?uploads", nil)
	var up struct{ UploadId string }
	if err != nil || st != 200 || xml.Unmarshal(b, &up) != nil || up.UploadId == "" {
		return false
	}
	v := l.value(id)
	st, hdr, _, err := do(c, "PUT", base+"/bkt/mp?partNumber=1&uploadId="+up.UploadId, []byte(v))
	if err != nil || st != 200 {
		return false
	}
	body := fmt.Sprintf(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>`,
		hdr.Get("ETag"))
	op := crashtest.Op{Key: regMP, Always: true, New: v, Client: id, What: "Complete"}
	call := time.Now()
	st, _, b, err = do(c, "POST", base+"/bkt/mp?uploadId="+up.UploadId, []byte(body))
	switch {
	case err == nil && st == 200 && bytes.Contains(b, []byte("CompleteMultipartUploadResult")):
		op.Outcome = crashtest.Done
	default:
		op.Outcome = crashtest.Unknown
	}
	l.record(op, call)
	return op.Outcome == crashtest.Done
}

// readBack reads every register from the restarted server, checks the
// index and that no refused value shows, and frees the lock of sessions
// killed mid-hold.
func (l *crashLoad) readBack(t *testing.T, base string, round int) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	id := round*100 + 99
	before := l.maxIndex.Load()
	st, hdr, _, err := do(c, "GET", base+"/v1/kv/?recurse", nil)
	if err != nil || st != 200 {
		t.Fatalf("after round %d: list: %d %v", round, st, err)
	}
	if idx, _ := strconv.ParseUint(hdr.Get("X-Consul-Index"), 10, 64); idx < before {
		t.Fatalf("after round %d: X-Consul-Index went backwards across the crash: %d < %d", round, idx, before)
	}
	l.seeIndex(hdr)
	var got []string
	for _, k := range casKeys {
		e, ok := l.kvRead(c, base, k, k, false, id)
		if !ok {
			t.Fatalf("after round %d: read %s failed", round, k)
		}
		got = append(got, string(e.Value))
	}
	a, b, ok := l.txnRead(c, base, id)
	if !ok {
		t.Fatalf("after round %d: txn read failed", round)
	}
	got = append(got, string(a.Value), string(b.Value))
	if _, ok := l.kvRead(c, base, "lock", regLock, true, id); !ok {
		t.Fatalf("after round %d: read lock failed", round)
	}
	for _, k := range []string{"o", "mp"} {
		v, _, ok := l.s3Read(c, base, k, "s3/"+k, id)
		if !ok {
			t.Fatalf("after round %d: read s3 %s failed", round, k)
		}
		got = append(got, v)
	}
	l.mu.Lock()
	for _, v := range got {
		if v != "" && l.refused[v] {
			t.Errorf("after round %d: the refused write %q is visible", round, v)
		}
	}
	sessions := l.sessions
	l.sessions = nil
	l.mu.Unlock()
	// Sessions of the dead round may hold the lock: destroy them (a
	// release if held: a soft write).
	for _, s := range sessions {
		op := crashtest.Op{Key: regLock, Expect: s, New: "", Soft: true, Client: id, What: "session destroy"}
		call := time.Now()
		st, _, _, err := do(c, "PUT", base+"/v1/session/destroy/"+s, nil)
		if err != nil || st != 200 {
			t.Fatalf("after round %d: destroy session: %d %v", round, st, err)
		}
		op.Outcome = crashtest.Done
		l.record(op, call)
	}
}
