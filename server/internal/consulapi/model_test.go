package consulapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// modelEntry is the reference model's view of one key.
type modelEntry struct {
	value     string
	flags     uint64
	lockIndex uint64
	session   string
}

// TestKVRandomAgainstModel runs random KV writes (set, cas with a fresh,
// stale or zero index, acquire and release by two sessions, delete,
// delete-cas, session destroy) over raw HTTP and checks after each one
// that every key matches a tiny reference model of Consul's rules
// (sets, cas, locks, sessions), and that ModifyIndex moved exactly when the model says a write
// happened. It runs twice: with Options.BumpIdenticalWrites (every write
// bumps ModifyIndex) and by default, where identical writes are skipped as
// Consul skips them; values and flags repeat so that identical writes
// occur and must leave ModifyIndex alone. Rerun a
// failure with LATCHKEY_CONSULAPI_SEED=<seed>.
func TestKVRandomAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LATCHKEY_CONSULAPI_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with LATCHKEY_CONSULAPI_SEED=%d)", seed, seed)
	t.Run("bump identical writes", func(t *testing.T) { runKVModel(t, seed, false) })
	t.Run("skip identical writes", func(t *testing.T) { runKVModel(t, seed, true) })
}

func runKVModel(t *testing.T, seed uint64, skip bool) {
	rng := rand.New(rand.NewPCG(seed, seed))
	s := newTestServer(t, &Options{MinSessionTTL: 100 * time.Millisecond, BumpIdenticalWrites: !skip})
	newSession := func() string {
		_, body := s.do(t, "PUT", "/v1/session/create", `{"LockDelay":"0s"}`)
		var out struct{ ID string }
		if err := json.Unmarshal([]byte(body), &out); err != nil || out.ID == "" {
			t.Fatalf("session create: %s", body)
		}
		return out.ID
	}
	sessions := []string{newSession(), newSession()}
	keys := []string{"m/a", "m/b", "m/c"}
	model := map[string]*modelEntry{}
	indexes := map[string]uint64{} // last ModifyIndex seen per key

	read := func(key string) (*dirEntry, bool) {
		resp, body := s.do(t, "GET", "/v1/kv/"+key, "")
		if resp.StatusCode == 404 {
			return nil, false
		}
		var es []dirEntry
		if err := json.Unmarshal([]byte(body), &es); err != nil || len(es) != 1 {
			t.Fatalf("GET %s: %d %s", key, resp.StatusCode, body)
		}
		return &es[0], true
	}
	identicals := 0
	for step := range 300 {
		key := keys[rng.IntN(len(keys))]
		cur := model[key]
		val := fmt.Sprintf("v%d", step)
		if skip {
			val = fmt.Sprintf("v%d", rng.IntN(2))
		}
		flags := uint64(rng.IntN(3))
		sid := sessions[rng.IntN(2)]
		var (
			desc, path, method = "", "/v1/kv/" + key, "PUT"
			wantOK             = true
			next               = cur
			touched            = []string{key}
		)
		setTo := func(session string, lockIndex uint64) *modelEntry {
			return &modelEntry{value: val, flags: flags, lockIndex: lockIndex, session: session}
		}
		switch op := rng.IntN(9); op {
		case 0: // set: LockIndex → 0, Session kept
			desc = "set"
			path += fmt.Sprintf("?flags=%d", flags)
			sess := ""
			if cur != nil {
				sess = cur.session
			}
			next = setTo(sess, 0)
		case 1, 2: // cas with the current, a stale or the zero index
			idx := indexes[key]
			switch rng.IntN(3) {
			case 1:
				idx = uint64(rng.IntN(int(idx) + 1)) // maybe stale
			case 2:
				idx = 0
			}
			desc = fmt.Sprintf("cas=%d (current %d)", idx, indexes[key])
			path += fmt.Sprintf("?cas=%d&flags=%d", idx, flags)
			ok := (idx == 0 && cur == nil) || (idx != 0 && cur != nil && idx == indexes[key])
			wantOK, next = ok, cur
			if ok {
				sess := ""
				if cur != nil {
					sess = cur.session
				}
				next = setTo(sess, 0)
			}
		case 3, 4: // acquire
			desc = "acquire by " + sid[:8]
			path += fmt.Sprintf("?acquire=%s&flags=%d", sid, flags)
			switch {
			case cur == nil:
				next = setTo(sid, 1)
			case cur.session == sid:
				next = setTo(sid, cur.lockIndex)
			case cur.session == "":
				next = setTo(sid, cur.lockIndex+1)
			default:
				wantOK = false
			}
		case 5: // release: Session cleared, LockIndex kept, value replaced
			desc = "release by " + sid[:8]
			path += fmt.Sprintf("?release=%s&flags=%d", sid, flags)
			if cur != nil && cur.session == sid {
				next = setTo("", cur.lockIndex)
			} else {
				wantOK = false
			}
		case 6: // delete
			desc, method, next = "delete", "DELETE", nil
			if cur == nil {
				touched = nil
			}
		case 7: // delete-cas
			idx := indexes[key]
			if rng.IntN(2) == 0 && idx > 0 {
				idx--
			}
			desc, method = fmt.Sprintf("delete cas=%d (current %d)", idx, indexes[key]), "DELETE"
			path += fmt.Sprintf("?cas=%d", idx)
			switch {
			case cur == nil:
				touched = nil // true, nothing to delete
			case idx == indexes[key]:
				next = nil
			default:
				wantOK = false
			}
		case 8: // destroy a session: its keys are released (LockIndex, value kept)
			i := rng.IntN(2)
			old := sessions[i]
			desc, method, path = "destroy "+old[:8], "PUT", "/v1/session/destroy/"+old
			touched = nil
			for _, k := range keys {
				if e := model[k]; e != nil && e.session == old {
					c := *e
					c.session = ""
					model[k] = &c
					touched = append(touched, k)
				}
			}
			next = model[key]
			sessions[i] = newSession()
		}
		if !wantOK {
			touched = nil
		}
		if skip && method == "PUT" && cur != nil && next != nil && *next == *cur && !strings.HasPrefix(desc, "destroy") {
			touched = nil // an identical write: skipped
			identicals++
		}
		resp, body := s.do(t, method, path, val)
		if resp.StatusCode != 200 || body != strconv.FormatBool(wantOK) {
			t.Fatalf("step %d %s on %s: got %d %s, want %v", step, desc, key, resp.StatusCode, body, wantOK)
		}
		model[key] = next
		if next == nil {
			delete(model, key)
		}
		for _, k := range keys {
			got, ok := read(k)
			want := model[k]
			if ok != (want != nil) {
				t.Fatalf("step %d %s on %s: key %s exists=%v, model says %v", step, desc, key, k, ok, want != nil)
			}
			moved := ok && got.ModifyIndex != indexes[k]
			wrote := false
			for _, w := range touched {
				wrote = wrote || w == k
			}
			if ok && moved != wrote {
				t.Fatalf("step %d %s on %s: key %s ModifyIndex %d→%d, model says written=%v", step, desc, key, k, indexes[k], got.ModifyIndex, wrote)
			}
			if !ok {
				indexes[k] = 0
				continue
			}
			if string(got.Value) != want.value || got.Flags != want.flags || got.LockIndex != want.lockIndex || got.Session != want.session {
				t.Fatalf("step %d %s on %s: key %s = %+v (value %q), model %+v", step, desc, key, k, got, got.Value, *want)
			}
			indexes[k] = got.ModifyIndex
		}
	}
	if skip && identicals == 0 {
		t.Fatal("no identical write happened: the skip mode was not exercised")
	}
	if skip {
		t.Logf("%d identical writes skipped", identicals)
	}
}
