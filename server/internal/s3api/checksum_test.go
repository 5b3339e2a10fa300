package s3api

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// TestCRCCombine: the CRC of A‖B combined from the parts' CRCs equals the
// CRC of A‖B, for every CRC with a full-object multipart checksum.
func TestCRCCombine(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, alg := range []string{"crc32", "crc32c", "crc64nvme"} {
		for range 50 {
			a := make([]byte, rng.IntN(3000))
			b := make([]byte, rng.IntN(3000))
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			sum := func(p ...[]byte) uint64 {
				h := sigv4.NewChecksumHash(alg)
				for _, x := range p {
					h.Write(x)
				}
				return beUint(h.Sum(nil))
			}
			if got, want := crcCombine(alg, sum(a), sum(b), int64(len(b))), sum(a, b); got != want {
				t.Fatalf("%s len %d+%d: combined %x, want %x", alg, len(a), len(b), got, want)
			}
		}
	}
}

// TestChecksumsKeptHTTP: kept checksums come back on HEAD only in
// checksum mode and only for the whole object; multipart uploads of each
// algorithm get composite or full-object checksums.
func TestChecksumsKeptHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("cks")
	for _, alg := range sigv4.ChecksumAlgorithms {
		body := "payload-" + alg
		r := s.mustDo(200, "PUT", "/cks/"+alg, []byte(body), "x-amz-checksum-"+alg, checksumOf(alg, body))
		if r.Header.Get("x-amz-checksum-"+alg) != checksumOf(alg, body) || r.Header.Get("x-amz-checksum-type") != "FULL_OBJECT" {
			t.Fatalf("%s PUT: %v", alg, r.Header)
		}
		if h := s.mustDo(200, "HEAD", "/cks/"+alg, nil).Header; h.Get("x-amz-checksum-"+alg) != "" {
			t.Fatalf("%s HEAD without checksum mode: %v", alg, h)
		}
		if h := s.mustDo(200, "HEAD", "/cks/"+alg, nil, "x-amz-checksum-mode", "ENABLED").Header; h.Get("x-amz-checksum-"+alg) != checksumOf(alg, body) {
			t.Fatalf("%s HEAD in checksum mode: %v", alg, h)
		}
		if h := s.mustDo(206, "GET", "/cks/"+alg, nil, "x-amz-checksum-mode", "ENABLED", "Range", "bytes=0-1").Header; h.Get("x-amz-checksum-"+alg) != "" {
			t.Fatalf("%s ranged GET carries the whole object's checksum: %v", alg, h)
		}
	}
	parts := []string{"first", "second part"}
	for _, tc := range []struct{ alg, typ, wantType string }{
		{"CRC32", "", "COMPOSITE"}, {"CRC32C", "FULL_OBJECT", "FULL_OBJECT"}, {"CRC64NVME", "", "FULL_OBJECT"},
		{"SHA1", "", "COMPOSITE"}, {"SHA256", "COMPOSITE", "COMPOSITE"},
	} {
		alg := strings.ToLower(tc.alg)
		hdr := []string{"x-amz-checksum-algorithm", tc.alg}
		if tc.typ != "" {
			hdr = append(hdr, "x-amz-checksum-type", tc.typ)
		}
		m := s.createMPU("/cks/mp-"+alg, hdr...)
		var raw []byte
		for i, p := range parts {
			// Part 1 without a checksum: the server computes it.
			var ph []string
			if i == 1 {
				ph = []string{"x-amz-checksum-" + alg, checksumOf(alg, p)}
			}
			r := s.mustDo(200, "PUT", "/cks/mp-"+alg+"?partNumber="+string(rune('1'+i))+"&uploadId="+m.id, []byte(p), ph...)
			if r.Header.Get("x-amz-checksum-"+alg) != checksumOf(alg, p) {
				t.Fatalf("%s part %d: %v", alg, i+1, r.Header)
			}
			m.etags[i+1] = r.Header.Get("ETag")
			b, _ := base64.StdEncoding.DecodeString(checksumOf(alg, p))
			raw = append(raw, b...)
		}
		lp := string(s.mustDo(200, "GET", "/cks/mp-"+alg+"?uploadId="+m.id, nil).Body)
		if !strings.Contains(lp, "<Checksum"+tc.alg+">"+checksumOf(alg, parts[0])+"</Checksum"+tc.alg+">") ||
			!strings.Contains(lp, "<ChecksumAlgorithm>"+tc.alg+"</ChecksumAlgorithm>") {
			t.Fatalf("%s ListParts: %s", alg, lp)
		}
		want := checksumOf(alg, strings.Join(parts, ""))
		if tc.wantType == "COMPOSITE" {
			want = checksumOf(alg, string(raw)) + "-2"
		}
		before := s.stateOf()
		if r := m.complete([]string{"x-amz-checksum-" + alg, checksumOf(alg, "other")}, 1, 2); r.Status != 400 || r.err().Code != "BadDigest" {
			t.Fatalf("%s complete with a wrong object checksum: %d %s", alg, r.Status, r.Body)
		}
		if after := s.stateOf(); after != before {
			t.Fatalf("%s: a refused complete changed state", alg)
		}
		r := m.complete([]string{"x-amz-checksum-" + alg, want}, 1, 2)
		wantXML := "<Checksum" + tc.alg + ">" + want + "</Checksum" + tc.alg + "><ChecksumType>" + tc.wantType + "</ChecksumType>"
		if r.Status != 200 || !strings.Contains(string(r.Body), wantXML) {
			t.Fatalf("%s complete: %d %s, want %s", alg, r.Status, r.Body, wantXML)
		}
		if h := s.mustDo(200, "HEAD", "/cks/mp-"+alg, nil, "x-amz-checksum-mode", "ENABLED").Header; h.Get("x-amz-checksum-"+alg) != want || h.Get("x-amz-checksum-type") != tc.wantType {
			t.Fatalf("%s HEAD: %v", alg, h)
		}
	}
}
