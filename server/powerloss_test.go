package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/powerfs"
	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/crashtest"
)

// Power-loss rounds of the server (issue 23 items 7 and 8): the server
// process runs on powerfs, which keeps only what was fsynced, under a
// scripted workload of every kind of write (Consul KV puts, CAS, deletes,
// a transaction, values large enough to start a checkpoint; S3 bucket
// create, puts, a multipart upload, a delete). The power is cut after the
// k-th sync for every k (and at random moments), the server is killed and
// restarted on the image, and every write acknowledged before the cut must
// be there (or the write in flight at the cut), the generated S3
// credentials too. See psPlan for how many rounds run.

// psState is what the server must hold: Consul keys and S3 objects
// ("bucket/key") with their values (nil: absent).
type psState map[string]*string

func (s psState) clone() psState {
	out := make(psState, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

func pstr(s string) *string { return &s }

// psOp is one step: it returns whether the server acknowledged it.
type psOp struct {
	name   string
	run    func(c *http.Client, base string) (bool, error)
	effect psState
}

func psDo(c *http.Client, method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// psWorkload writes every kind of record the server keeps.
func psWorkload(tag string) []psOp {
	kvPut := func(key, val, query string) func(*http.Client, string) (bool, error) {
		return func(c *http.Client, base string) (bool, error) {
			code, b, err := psDo(c, http.MethodPut, base+"/v1/kv/"+key+query, []byte(val))
			return err == nil && code == 200 && strings.TrimSpace(string(b)) == "true", err
		}
	}
	kvCAS := func(key, val string) func(*http.Client, string) (bool, error) {
		return func(c *http.Client, base string) (bool, error) {
			code, b, err := psDo(c, http.MethodGet, base+"/v1/kv/"+key, nil)
			if err != nil {
				return false, err
			}
			idx := uint64(0)
			if code == 200 {
				var cur []kvEntry
				if err := json.Unmarshal(b, &cur); err != nil || len(cur) != 1 {
					return false, fmt.Errorf("get %s: %s", key, b)
				}
				idx = cur[0].ModifyIndex
			}
			return kvPut(key, val, fmt.Sprintf("?cas=%d", idx))(c, base)
		}
	}
	s3 := func(method, path string, body []byte, want int) func(*http.Client, string) (bool, error) {
		return func(c *http.Client, base string) (bool, error) {
			code, _, err := psDo(c, method, base+path, body)
			return err == nil && code == want, err
		}
	}
	multipart := func(path string, body []byte) func(*http.Client, string) (bool, error) {
		return func(c *http.Client, base string) (bool, error) {
			code, b, err := psDo(c, http.MethodPost, base+path+"?uploads", nil)
			if err != nil || code != 200 {
				return false, err
			}
			var init struct{ UploadId string }
			if err := xml.Unmarshal(b, &init); err != nil {
				return false, err
			}
			req, _ := http.NewRequest(http.MethodPut, base+path+"?partNumber=1&uploadId="+init.UploadId, bytes.NewReader(body))
			resp, err := c.Do(req)
			if err != nil {
				return false, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return false, nil
			}
			done := fmt.Sprintf("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>",
				resp.Header.Get("ETag"))
			code, _, err = psDo(c, http.MethodPost, base+path+"?uploadId="+init.UploadId, []byte(done))
			return err == nil && code == 200, err
		}
	}
	txn := func(keys ...string) func(*http.Client, string) (bool, error) {
		return func(c *http.Client, base string) (bool, error) {
			var ops []map[string]map[string]string
			for _, k := range keys {
				ops = append(ops, map[string]map[string]string{"KV": {"Verb": "set", "Key": k,
					"Value": base64.StdEncoding.EncodeToString([]byte(k + tag))}})
			}
			b, _ := json.Marshal(ops)
			code, _, err := psDo(c, http.MethodPut, base+"/v1/txn", b)
			return err == nil && code == 200, err
		}
	}
	big := strings.Repeat("x", 450<<10)
	obj := bytes.Repeat([]byte(tag), 128<<10/len(tag))
	ops := []psOp{
		{"kv put a", kvPut("a", "a1"+tag, ""), psState{"a": pstr("a1" + tag)}},
		{"kv create b", kvPut("b", "b1"+tag, "?cas=0"), psState{"b": pstr("b1" + tag)}},
		{"kv cas a", kvCAS("a", "a2"+tag), psState{"a": pstr("a2" + tag)}},
		{"kv delete b", kvPut("b", "", "?delete"), nil},
		{"kv txn t1 t2", txn("t1", "t2"), psState{"t1": pstr("t1" + tag), "t2": pstr("t2" + tag)}},
		{"s3 create bucket", s3(http.MethodPut, "/bkt", nil, 200), nil},
		{"s3 put obj", s3(http.MethodPut, "/bkt/obj", []byte("o1"+tag), 200), psState{"bkt/obj": pstr("o1" + tag)}},
		{"s3 put big", s3(http.MethodPut, "/bkt/big", obj, 200), psState{"bkt/big": pstr(string(obj))}},
		// Sealed under the generated SSE master key: readable after the
		// cut only if the key file survived with the object.
		{"s3 put sse", func(c *http.Client, base string) (bool, error) {
			req, err := http.NewRequest(http.MethodPut, base+"/bkt/sse", bytes.NewReader([]byte("s1"+tag)))
			if err != nil {
				return false, err
			}
			req.Header.Set("X-Amz-Server-Side-Encryption", "AES256")
			resp, err := c.Do(req)
			if err != nil {
				return false, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == 200, nil
		}, psState{"bkt/sse": pstr("s1" + tag)}},
		{"s3 multipart mp", multipart("/bkt/mp", obj[:1000]), psState{"bkt/mp": pstr(string(obj[:1000]))}},
		{"s3 delete obj", s3(http.MethodDelete, "/bkt/obj", nil, 204), psState{"bkt/obj": nil}},
	}
	// Consul's delete answers true with no body check above: model it.
	ops[3].run = func(c *http.Client, base string) (bool, error) {
		code, b, err := psDo(c, http.MethodDelete, base+"/v1/kv/b", nil)
		return err == nil && code == 200 && strings.TrimSpace(string(b)) == "true", err
	}
	ops[3].effect = psState{"b": nil}
	// Large values: past LogBytes/2 of log records, a checkpoint starts.
	for i := range 5 {
		k := fmt.Sprintf("big%d", i)
		ops = append(ops, psOp{"kv put " + k, kvPut(k, big+tag, ""), psState{k: pstr(big + tag)}})
	}
	return append(ops, psOp{"kv put last", kvPut("last", "l"+tag, ""), psState{"last": pstr("l" + tag)}})
}

// psServer starts a server process on dir (anonymous S3).
func psServer(t *testing.T, dir string) *crashtest.Process {
	t.Helper()
	return crashtest.Start(t, testutil.Child(childEnv+"=serve", childDirEnv+"="+dir, childAnonEnv+"=1"))
}

// psCounts are the figures of a run of rounds.
type psCounts struct{ rounds, acks, lost int }

// psDataDir is the data directory under a mount or image: its parents are
// made by the server.
func psDataDir(root string) string { return filepath.Join(root, "srv", "latchkey") }

// psRound runs ops against a server on a powerfs over src until the cut
// (after cutAfter syncs, or at a random moment within cutAt), restarts the
// server on the image and checks it against state. It returns the image,
// the state it holds, and the round's syncs.
func psRound(t *testing.T, src string, model powerfs.Model, cutAfter int, cutAt time.Duration, ops []psOp,
	state psState, c *psCounts) (string, psState, int) {
	t.Helper()
	p := powerfs.Mount(t, src, powerfs.Options{Model: model, CutAfter: cutAfter})
	if cutAt > 0 {
		timer := time.AfterFunc(rand.N(cutAt), func() { p.Cut() })
		defer timer.Stop()
	}
	next, inflight := state.clone(), psState{}
	srv := psServer(t, psDataDir(p.Dir()))
	creds, credErr := os.ReadFile(filepath.Join(psDataDir(p.Dir()), "s3-credentials.json"))
	credsAcked := credErr == nil && !p.IsCut() // printed to the operator before the cut
	client := &http.Client{Timeout: 30 * time.Second}
	acks := 0
	for _, op := range ops {
		ok, err := op.run(client, srv.URL)
		if p.IsCut() {
			inflight = op.effect
			break
		}
		if err != nil || !ok {
			t.Fatalf("%s before the cut: acknowledged %t, %v", op.name, ok, err)
		}
		acks++
		for k, v := range op.effect {
			next[k] = v
		}
	}
	syncs := p.Syncs()
	p.Cut()
	srv.Kill()
	p.Unmount()
	out := filepath.Join(t.TempDir(), "image")
	if err := p.Materialize(out); err != nil {
		t.Fatal(err)
	}
	c.rounds++
	c.acks += acks
	what := fmt.Sprintf("%s, cut after sync %d", model, cutAfter)
	if credsAcked {
		if got, err := os.ReadFile(filepath.Join(psDataDir(out), "s3-credentials.json")); err != nil || !bytes.Equal(got, creds) {
			c.lost++
			t.Errorf("%s: the S3 credentials printed before the cut are gone or changed (%v)", what, err)
		}
	}
	held := psCheck(t, out, next, inflight, c, what)
	for k, v := range inflight {
		if g := held[k]; (g == nil) == (v == nil) && (g == nil || *g == *v) {
			next[k] = v
		}
	}
	return out, next, syncs
}

// psCheck restarts a server on the image in out and counts the keys that
// hold neither their acknowledged value nor the in-flight one. It returns
// what the server holds.
func psCheck(t *testing.T, out string, acked, inflight psState, c *psCounts, what string) psState {
	t.Helper()
	// In this process: the image is on an ordinary directory.
	s, err := server.New(server.Config{DataDir: psDataDir(out), Anonymous: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("%s: the server does not start on the image: %v", what, err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := srv.Client()
	held := psState{}
	keys := map[string]bool{}
	for k := range acked {
		keys[k] = true
	}
	for k := range inflight {
		keys[k] = true
	}
	for k := range keys {
		url := srv.URL + "/v1/kv/" + k + "?raw"
		if strings.Contains(k, "/") {
			url = srv.URL + "/" + k
		}
		code, b, err := psDo(client, http.MethodGet, url, nil)
		if err != nil {
			t.Fatalf("%s: get %s after the restart: %v", what, k, err)
		}
		switch code {
		case 200:
			held[k] = pstr(string(b))
		case 404:
		default:
			t.Fatalf("%s: get %s after the restart: %d %s", what, k, code, b)
		}
		if got := held[k]; !powerfs.Survived(got, k, acked, inflight) {
			c.lost++
			t.Errorf("%s: %s after the restart: %s, acknowledged %s", what, k, powerfs.Show(got), powerfs.Show(acked[k]))
		}
	}
	return held
}

// psPlan is how many rounds to run: with LATCHKEY_POWERLOSS_ROUNDS=N set,
// every crash point under both models, N random-moment rounds per start
// and 12 cuts of the recovery; by default (CI), every stride-th crash
// point from a random offset (logged), so that runs together cover them
// all, one random round per start under the strict model and 2 cuts of the
// recovery (about 10 rounds: each starts a server process on FUSE, which
// takes seconds under the race detector).
type psPlan struct {
	long   bool
	random int
}

func psPlanFromEnv() psPlan {
	n, err := strconv.Atoi(os.Getenv("LATCHKEY_POWERLOSS_ROUNDS"))
	if err != nil || n < 0 {
		return psPlan{random: 1}
	}
	return psPlan{long: true, random: n}
}

// stride is the step between crash points for a model and start; 0: none.
func (p psPlan) stride(model powerfs.Model, populated bool) int {
	switch {
	case p.long:
		return 1
	case model == powerfs.Strict && !populated:
		return 12
	case model == powerfs.Strict || !populated:
		return 40
	}
	return 0
}

// randoms is the number of random-moment rounds for a model and start.
func (p psPlan) randoms(model powerfs.Model, populated bool) int {
	if p.long || (model == powerfs.Strict && !populated) {
		return p.random
	}
	return 0
}

// recoveryCuts is the number of crash points in the recovery rounds.
func (p psPlan) recoveryCuts(model powerfs.Model) int {
	switch {
	case p.long:
		return 12
	case model == powerfs.Strict:
		return 2
	}
	return 0
}

// TestServerPowerLoss: a fresh data directory (with parents the server
// makes) and a populated one, cut after every sync of the workload (a
// sample of them by default, see psPlan) under the strict and the
// journaling model, at random moments, and during the recovery of an
// image cut mid-workload.
func TestServerPowerLoss(t *testing.T) {
	plan := psPlanFromEnv()
	for _, model := range []powerfs.Model{powerfs.Strict, powerfs.Journaling} {
		t.Run(model.String(), func(t *testing.T) {
			var c psCounts
			cuts := 0
			populated, pstate, total := psRound(t, "", model, 0, 0, psWorkload("-p"), nil, &c)
			for _, start := range []struct {
				src   string
				state psState
			}{{"", nil}, {populated, pstate}} {
				if stride := plan.stride(model, start.src != ""); stride > 0 {
					first := 1 + rand.N(min(stride, total))
					t.Logf("%s: crash points %d, %d, ... of %d", model, first, first+stride, total)
					for k := first; k <= total; k += stride {
						psRound(t, start.src, model, k, 0, psWorkload("-r"), start.state, &c)
						cuts++
					}
				}
				for range plan.randoms(model, start.src != "") {
					psRound(t, start.src, model, 0, 500*time.Millisecond, psWorkload("-x"), start.state, &c)
					cuts++
				}
			}
			// Recovery itself: cut while the server opens an image that
			// was cut in the middle of the workload (log records to
			// replay, a checkpoint to restore).
			if n := plan.recoveryCuts(model); n > 0 {
				mid, mstate, _ := psRound(t, "", model, total*2/3, 0, psWorkload("-m"), nil, &c)
				for k := 1; k <= n; k++ {
					psRound(t, mid, model, k, 0, nil, mstate, &c)
					cuts++
				}
			}
			t.Logf("%s: %d rounds, %d crash points (%d syncs in the workload), %d acknowledged writes checked, %d lost",
				model, c.rounds, cuts, total, c.acks, c.lost)
		})
	}
}
