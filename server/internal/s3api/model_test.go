package s3api

import (
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// modelKey is the reference model of one key: its versions, newest last.
type modelVersion struct {
	id     string
	body   string
	marker bool
}

type model struct {
	versioned bool
	keys      map[string][]modelVersion
}

func (m *model) cur(k string) (modelVersion, bool) {
	vs := m.keys[k]
	if len(vs) == 0 {
		return modelVersion{}, false
	}
	return vs[len(vs)-1], true
}

func (m *model) exists(k string) bool { v, ok := m.cur(k); return ok && !v.marker }

func (m *model) write(k string, v modelVersion) {
	if !m.versioned {
		m.keys[k] = []modelVersion{v}
		return
	}
	m.keys[k] = append(m.keys[k], v)
}

// TestRandomAgainstModel runs random conditional PUT / DELETE / GET / LIST
// sequences on a plain and a versioned bucket and checks every status,
// body and listing against a tiny reference model. Set
// LATCHKEY_TEST_SEED to replay a run.
func TestRandomAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LATCHKEY_TEST_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (LATCHKEY_TEST_SEED=%d to replay)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := newTestServer(t, nil)
	for _, versioned := range []bool{false, true} {
		bucket := "plain"
		if versioned {
			bucket = "versioned"
		}
		s.bucket(bucket)
		if versioned {
			s.versioned(bucket, "Enabled")
		}
		m := &model{versioned: versioned, keys: map[string][]modelVersion{}}
		keys := []string{"a", "b/c", "b/d", "e f"}
		for step := range 300 {
			k := keys[rng.IntN(len(keys))]
			path := "/" + bucket + "/" + escapeKey(k)
			fail := func(format string, args ...any) {
				t.Fatalf("seed %d, %s step %d key %q: %s", seed, bucket, step, k, fmt.Sprintf(format, args...))
			}
			switch op := rng.IntN(6); op {
			case 0, 1: // PUT: unconditional, If-None-Match: *, If-Match right or wrong
				body := fmt.Sprintf("v%d", rng.IntN(4)) // repeats: identical bodies share ETags
				var hdr []string
				want := 200
				switch rng.IntN(4) {
				case 1:
					hdr = []string{"If-None-Match", "*"}
					if m.exists(k) {
						want = 412
					}
				case 2, 3:
					etag := md5ETag(fmt.Sprintf("v%d", rng.IntN(4)))
					hdr = []string{"If-Match", etag}
					c, _ := m.cur(k)
					switch {
					case !m.exists(k):
						want = 404
					case md5ETag(c.body) != etag:
						want = 412
					}
				}
				r := s.do("PUT", path, []byte(body), hdr...)
				if r.Status != want {
					fail("PUT %v: %d, want %d", hdr, r.Status, want)
				}
				if want == 200 {
					m.write(k, modelVersion{id: r.Header.Get("x-amz-version-id"), body: body})
				}
			case 2: // DELETE, maybe with If-Match
				var hdr []string
				want := 204
				if rng.IntN(2) == 0 {
					c, _ := m.cur(k)
					etag := md5ETag(fmt.Sprintf("v%d", rng.IntN(4)))
					hdr = []string{"If-Match", etag}
					switch {
					case !m.exists(k):
						want = 404
					case md5ETag(c.body) != etag:
						want = 412
					}
				}
				r := s.do("DELETE", path, nil, hdr...)
				if r.Status != want {
					fail("DELETE %v: %d, want %d", hdr, r.Status, want)
				}
				if want == 204 {
					if versioned {
						m.write(k, modelVersion{id: r.Header.Get("x-amz-version-id"), marker: true})
					} else {
						delete(m.keys, k)
					}
				}
			case 3: // GET current
				r := s.do("GET", path, nil)
				c, _ := m.cur(k)
				if m.exists(k) != (r.Status == 200) || (r.Status == 200 && string(r.Body) != c.body) {
					fail("GET: %d %q, model %+v", r.Status, r.Body, c)
				}
			case 4: // GET an older version by id
				vs := m.keys[k]
				if !versioned || len(vs) == 0 {
					continue
				}
				v := vs[rng.IntN(len(vs))]
				r := s.do("GET", path+"?versionId="+v.id, nil)
				switch {
				case v.marker && r.Status != 405, !v.marker && (r.Status != 200 || string(r.Body) != v.body):
					fail("GET version %+v: %d %q", v, r.Status, r.Body)
				}
			case 5: // LIST
				r := s.mustDo(200, "GET", "/"+bucket+"?list-type=2", nil)
				var p v2page
				if err := xml.Unmarshal(r.Body, &p); err != nil {
					fail("list: %v", err)
				}
				var got, want []string
				for _, c := range p.Contents {
					got = append(got, c.Key)
				}
				for _, kk := range keys {
					if m.exists(kk) {
						want = append(want, kk)
					}
				}
				if !slices.Equal(got, want) {
					fail("list %q, model %q", got, want)
				}
			}
		}
	}
}

func escapeKey(k string) string {
	out := ""
	for _, c := range []byte(k) {
		if c == ' ' {
			out += "%20"
		} else {
			out += string(c)
		}
	}
	return out
}

// TestConcurrentCASIncrements: 8 clients × 10 read-modify-write increments
// with If-Match over HTTP lose no update, on a versioned bucket whose key
// starts under a delete marker (created with If-None-Match: *).
func TestConcurrentCASIncrements(t *testing.T) {
	s := newTestServer(t, nil)
	s.versionedBucket("cas")
	s.put("/cas/n", "stale")
	s.mustDo(204, "DELETE", "/cas/n", nil)
	s.mustDo(200, "PUT", "/cas/n", []byte("0"), "If-None-Match", "*")
	const clients, incs = 8, 10
	errs := make(chan error, clients)
	for range clients {
		go func() {
			for done, tries := 0, 0; done < incs; tries++ {
				if tries > 10000 {
					errs <- fmt.Errorf("no progress")
					return
				}
				g, err := s.try("GET", "/cas/n", nil)
				if err != nil {
					errs <- err
					return
				}
				n, _ := strconv.Atoi(string(g.Body))
				r, err := s.try("PUT", "/cas/n", []byte(strconv.Itoa(n+1)), "If-Match", g.Header.Get("ETag"))
				if err != nil {
					errs <- err
					return
				}
				switch r.Status {
				case 200:
					done++
				case 412:
				default:
					errs <- fmt.Errorf("status %d", r.Status)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if g := s.mustDo(200, "GET", "/cas/n", nil); string(g.Body) != strconv.Itoa(clients*incs) {
		t.Fatalf("counter %s, want %d", g.Body, clients*incs)
	}
}
