package ssecrypt

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"
)

func testKeyring(t *testing.T, fill byte) *Keyring {
	t.Helper()
	k, err := New(bytes.Repeat([]byte{fill}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func randBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func readRange(k *Keyring, sealed []byte, size int64, bucket, key string, off, n int64) ([]byte, error) {
	r, err := k.OpenRange(bytes.NewReader(sealed), size, bucket, key, off, n)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestSealOpenRanges(t *testing.T) {
	k := testKeyring(t, 1)
	for _, size := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 5} {
		plain := randBytes(t, size)
		var buf bytes.Buffer
		w, err := k.NewWriter(&buf, "b", "k")
		if err != nil {
			t.Fatal(err)
		}
		// Odd write sizes cross chunk boundaries.
		for p := plain; len(p) > 0; {
			n := min(len(p), 7777)
			if _, err := w.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		sealed := buf.Bytes()
		if int64(len(sealed)) != SealedSize(int64(size)) {
			t.Fatalf("size %d: sealed %d bytes, SealedSize says %d", size, len(sealed), SealedSize(int64(size)))
		}
		if size > 16 && bytes.Contains(sealed, plain[:16]) {
			t.Fatalf("size %d: plaintext visible in the sealed body", size)
		}
		if one, _ := k.Seal(plain, "b", "k"); len(one) != len(sealed) {
			t.Fatalf("Seal: %d bytes, want %d", len(one), len(sealed))
		}
		ranges := [][2]int64{{0, int64(size)}}
		for i := 0; i < 20 && size > 0; i++ {
			a, _ := rand.Int(rand.Reader, big.NewInt(int64(size)))
			b, _ := rand.Int(rand.Reader, big.NewInt(int64(size)-a.Int64()+1))
			ranges = append(ranges, [2]int64{a.Int64(), b.Int64()})
		}
		if size > ChunkSize {
			ranges = append(ranges, [2]int64{ChunkSize - 1, 2}, [2]int64{ChunkSize, int64(size - ChunkSize)})
		}
		for _, rg := range ranges {
			got, err := readRange(k, sealed, int64(size), "b", "k", rg[0], rg[1])
			if err != nil {
				t.Fatalf("size %d range %v: %v", size, rg, err)
			}
			if !bytes.Equal(got, plain[rg[0]:rg[0]+rg[1]]) {
				t.Fatalf("size %d range %v: wrong bytes", size, rg)
			}
		}
	}
}

func TestOpenRefusesTampering(t *testing.T) {
	k := testKeyring(t, 1)
	size := int64(3*ChunkSize + 10)
	plain := randBytes(t, int(size))
	sealed, err := k.Seal(plain, "b", "k")
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(i int) []byte {
		start := HeaderSize + i*(ChunkSize+tagSize)
		return sealed[start : start+ChunkSize+tagSize]
	}
	swapped := bytes.Clone(sealed)
	copy(swapped[HeaderSize:], chunk(1))
	copy(swapped[HeaderSize+ChunkSize+tagSize:], chunk(0))
	flipped := bytes.Clone(sealed)
	flipped[HeaderSize+5] ^= 1
	flippedLate := bytes.Clone(sealed)
	flippedLate[HeaderSize+2*(ChunkSize+tagSize)+5] ^= 1
	other, _ := k.Seal(plain, "b", "k")
	mixed := bytes.Clone(sealed)
	copy(mixed[HeaderSize:], other[HeaderSize:HeaderSize+ChunkSize+tagSize])
	cut := sealed[:HeaderSize+2*(ChunkSize+tagSize)] // two full chunks, no final one

	cases := []struct {
		name          string
		keyring       *Keyring
		body          []byte
		size          int64
		bucket, key   string
		off, n        int64
		want          error
		failOpenFirst bool
	}{
		{"another master key", testKeyring(t, 2), sealed, size, "b", "k", 0, size, ErrWrongKey, true},
		{"another object name", k, sealed, size, "b", "k2", 0, size, ErrCorrupt, true},
		{"another bucket", k, sealed, size, "b2", "k", 0, size, ErrCorrupt, true},
		{"chunks swapped", k, swapped, size, "b", "k", 0, 10, ErrCorrupt, true},
		{"a bit flipped", k, flipped, size, "b", "k", 0, 10, ErrCorrupt, true},
		{"a bit flipped in a later chunk", k, flippedLate, size, "b", "k", 0, size, ErrCorrupt, false},
		{"a chunk of another body", k, mixed, size, "b", "k", 0, 10, ErrCorrupt, true},
		{"cut at a chunk boundary", k, cut, 2 * ChunkSize, "b", "k", ChunkSize, ChunkSize, ErrCorrupt, true},
		{"not sealed", k, plain, size, "b", "k", 0, 1, ErrCorrupt, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.keyring.OpenRange(bytes.NewReader(c.body), c.size, c.bucket, c.key, c.off, c.n)
			if c.failOpenFirst {
				if !errors.Is(err, c.want) {
					t.Fatalf("OpenRange: %v, want %v", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if !errors.Is(err, c.want) {
				t.Fatalf("read: %v (%d bytes), want %v", err, len(got), c.want)
			}
		})
	}
}

func TestLoadOrCreate(t *testing.T) {
	dir := t.TempDir()
	k1, path, gen, err := LoadOrCreate(dir, "")
	if err != nil || !gen || path != filepath.Join(dir, MasterKeyFile) {
		t.Fatalf("first: %v generated=%v path=%s", err, gen, path)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".sse-master-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	k2, _, gen, err := LoadOrCreate(dir, "")
	if err != nil || gen || k2.KeyID() != k1.KeyID() {
		t.Fatalf("second: %v generated=%v id %s vs %s", err, gen, k2.KeyID(), k1.KeyID())
	}
	raw := bytes.Repeat([]byte{7}, KeySize)
	want := testKeyring(t, 7).KeyID()
	for name, data := range map[string][]byte{
		"raw": raw, "hex": []byte(hex.EncodeToString(raw) + "\n"), "base64": []byte(" " + base64.StdEncoding.EncodeToString(raw) + "\n"),
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		k, used, gen, err := LoadOrCreate(dir, f)
		if err != nil || gen || used != f || k.KeyID() != want {
			t.Fatalf("%s: %v generated=%v id %v", name, err, gen, k)
		}
	}
	for name, data := range map[string][]byte{"short": []byte("abcd"), "long hex": []byte(hex.EncodeToString(append(raw, 1)))} {
		f := filepath.Join(dir, name)
		_ = os.WriteFile(f, data, 0o600)
		if _, _, _, err := LoadOrCreate(dir, f); err == nil {
			t.Fatalf("%s key file accepted", name)
		}
	}
	if _, _, _, err := LoadOrCreate(dir, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing --sse-master-key-file was not an error")
	}
}

func BenchmarkSeal(b *testing.B) {
	k, _ := New(bytes.Repeat([]byte{1}, KeySize))
	plain := make([]byte, 1<<20)
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		w, _ := k.NewWriter(io.Discard, "b", "k")
		_, _ = w.Write(plain)
		_ = w.Close()
	}
}

func BenchmarkOpenRange(b *testing.B) {
	k, _ := New(bytes.Repeat([]byte{1}, KeySize))
	plain := make([]byte, 1<<20)
	sealed, _ := k.Seal(plain, "b", "k")
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		r, _ := k.OpenRange(bytes.NewReader(sealed), int64(len(plain)), "b", "k", 0, int64(len(plain)))
		_, _ = io.Copy(io.Discard, r)
	}
}
