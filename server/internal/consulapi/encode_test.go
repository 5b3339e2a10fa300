package consulapi

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"testing"
)

// awkwardStrings are keys and sessions that encoding/json escapes, or
// that look as if it might.
var awkwardStrings = []string{
	"", "k", "a/b/c", "with space", `quote"d`, `back\slash`, "<script>", "a&b", "tab\there", "nl\n",
	"\x00", "\x1f", "\x7f", "é", "日本", "\u2028\u2029", "\xff\xfe", "a\xc3", "😀", "~!@#$%^*()_+={}[]|:;',.?",
}

func randomEntry(r *rand.Rand) *dirEntry {
	str := func() string {
		if r.IntN(2) == 0 {
			return awkwardStrings[r.IntN(len(awkwardStrings))]
		}
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return string(b)
	}
	num := func() uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64
		}
		return r.Uint64() >> r.IntN(64)
	}
	e := &dirEntry{LockIndex: num(), Key: str(), Flags: num(), CreateIndex: num(), ModifyIndex: num()}
	if r.IntN(3) > 0 {
		e.Session = str()
	}
	switch r.IntN(3) {
	case 0: // nil: null
	case 1:
		e.Value = []byte{} // never stored (normValue), but encoded as ""
	default:
		e.Value = make([]byte, r.IntN(300))
		for i := range e.Value {
			e.Value[i] = byte(r.UintN(256))
		}
	}
	return e
}

// appendEntries is json.Marshal, byte for byte, on every kind of entry.
// LATCHKEY_SEED replays a seed.
func TestAppendEntriesIsJSONMarshal(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("LATCHKEY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (LATCHKEY_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	cases := [][]*dirEntry{nil, {}, {nil}}
	for _, s := range awkwardStrings {
		cases = append(cases, []*dirEntry{{Key: s, Session: s, Value: []byte(s)}})
	}
	for range 2000 {
		es := make([]*dirEntry, r.IntN(4)+1)
		for i := range es {
			es[i] = randomEntry(r)
		}
		cases = append(cases, es)
	}
	for _, es := range cases {
		want, err := json.Marshal(es)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntries([]byte("prefix"), es); !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("appendEntries(%+v)\n got %s\nwant %s", es, got[len("prefix"):], want)
		}
	}
}

// writeEntries and writeBool answer as writeJSON does: same status,
// headers and body, with and without ?pretty.
func TestFastAnswersAreWriteJSON(t *testing.T) {
	es := []*dirEntry{{Key: "a<b", Value: []byte("v"), Session: "s", CreateIndex: 3, ModifyIndex: 4}, {Key: "c"}}
	for _, raw := range []string{"", "pretty", "pretty=false&dc=dc1"} {
		q, _ := url.ParseQuery(raw)
		for _, c := range []struct {
			name      string
			fast, ref func(*httptest.ResponseRecorder)
		}{
			{"entries", func(w *httptest.ResponseRecorder) { writeEntries(w, q, es) }, func(w *httptest.ResponseRecorder) { writeJSON(w, q, 0, es) }},
			{"true", func(w *httptest.ResponseRecorder) { writeBool(w, q, true) }, func(w *httptest.ResponseRecorder) { writeJSON(w, q, 0, true) }},
			{"false", func(w *httptest.ResponseRecorder) { writeBool(w, q, false) }, func(w *httptest.ResponseRecorder) { writeJSON(w, q, 0, false) }},
		} {
			fast, ref := httptest.NewRecorder(), httptest.NewRecorder()
			c.fast(fast)
			c.ref(ref)
			gotH, _ := json.Marshal(fast.Header())
			wantH, _ := json.Marshal(ref.Header())
			if fast.Code != ref.Code || !bytes.Equal(gotH, wantH) || fast.Body.String() != ref.Body.String() {
				t.Errorf("?%s %s: %d %s %q, want %d %s %q", raw, c.name, fast.Code, gotH, fast.Body, ref.Code, wantH, ref.Body)
			}
		}
	}
}

// The header values responses share stay as they are when a response's
// headers are added to afterwards (Header.Add appends to a copy).
func TestSharedHeaderValuesStayConstant(t *testing.T) {
	w := httptest.NewRecorder()
	setQueryMeta(w, 7, "stale")
	writeBool(w, nil, true)
	for k := range w.Header() {
		w.Header().Add(k, "added")
	}
	for name, v := range map[string][]string{"valJSON": valJSON, "valZero": valZero, "valTrue": valTrue,
		"stale": valConsistency["stale"], "length 4": valLengths[4]} {
		if len(v) != 1 || v[0] == "added" {
			t.Errorf("shared %s is now %q", name, v)
		}
	}
	if got := w.Header().Values("X-Consul-Knownleader"); len(got) != 2 || got[0] != "true" || got[1] != "added" {
		t.Errorf("X-Consul-KnownLeader %q, want [true added]", got)
	}
}
