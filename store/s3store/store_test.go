package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

// eachPeer runs f against our server and, when configured, Versity Gateway.
func eachPeer(t *testing.T, f func(t *testing.T, p peer)) {
	t.Run("latchkey", func(t *testing.T) { f(t, latchkeyPeer(t)) })
	t.Run("versitygw", func(t *testing.T) { f(t, versityPeer(t)) })
}

// TestObjectFormat: the stored object is the nonce header plus the value,
// the same value written twice gets two ETags, and a raw reader sees the
// header.
func TestObjectFormat(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		v1, err := s.Put(ctx, "k", []byte("same"), store.Unconditional)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := s.Put(ctx, "k", []byte("same"), store.IfMatch(v1))
		if err != nil {
			t.Fatal(err)
		}
		if v1 == v2 {
			t.Fatalf("identical values got one ETag %s: ABA would be invisible", v1)
		}
		if _, err := s.Put(ctx, "k", []byte("same"), store.IfMatch(v1)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("If-Match of the first write of identical bytes: %v, want ErrConflict", err)
		}
		out, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String(s.Prefix() + "k")})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !strings.HasPrefix(string(raw), "latchkey-s3store-v1 ") || !strings.HasSuffix(string(raw), "\nsame") || len(raw) != 53+4 {
			t.Fatalf("raw object %q", raw)
		}
		if out.Metadata["latchkey-nonce"] == "" || !strings.Contains(string(raw), out.Metadata["latchkey-nonce"]) {
			t.Fatalf("metadata nonce %q does not match the header", out.Metadata["latchkey-nonce"])
		}
	})
}

// TestForeignObject: an object written by another tool reads whole.
func TestForeignObject(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String("plain"),
			Body: strings.NewReader("written elsewhere")}); err != nil {
			t.Fatal(err)
		}
		e, err := s.Get(ctx, "plain")
		if err != nil || string(e.Value) != "written elsewhere" {
			t.Fatalf("Get = %q, %v", e.Value, err)
		}
		if _, err := s.Put(ctx, "plain", []byte("ours now"), store.IfMatch(e.Version)); err != nil {
			t.Fatalf("CAS over a foreign object: %v", err)
		}
	})
}

// TestPutStreamPaths: a seekable reader streams from its offset; any other
// reader is spooled; both round-trip exactly.
func TestPutStreamPaths(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		data := bytes.Repeat([]byte("stream-"), 100000) // 700 kB
		seek := bytes.NewReader(append([]byte("SKIP"), data...))
		seek.Seek(4, io.SeekStart)
		for name, r := range map[string]io.Reader{
			"seekable":     seek,
			"non-seekable": io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:])),
		} {
			v, err := s.PutStream(ctx, "s/"+name, r, store.IfAbsent)
			if err != nil {
				t.Fatalf("%s: PutStream: %v", name, err)
			}
			rc, gv, err := s.GetStream(ctx, "s/"+name)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if gv != v || !bytes.Equal(got, data) {
				t.Fatalf("%s: version %s/%s, %d bytes equal=%v", name, v, gv, len(got), bytes.Equal(got, data))
			}
		}
	})
}

// TestListFlat pages through 250 keys with prefixes and After. (The
// storetest List cases are not run on Versity Gateway; these keys avoid
// the file/directory clash its posix backend has.)
func TestListFlat(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		var want []string
		for i := 0; i < 250; i++ {
			k := fmt.Sprintf("l/%03d", i)
			if _, err := s.Put(ctx, k, []byte{byte(i)}, store.Unconditional); err != nil {
				t.Fatal(err)
			}
			want = append(want, k)
		}
		if _, err := s.Put(ctx, "m", nil, store.Unconditional); err != nil {
			t.Fatal(err)
		}
		var got []string
		opts := &store.ListOptions{Limit: 100}
		pages := 0
		for {
			page, err := s.List(ctx, "l/", opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range page.Items {
				got = append(got, it.Key)
				if it.Version == "" {
					t.Fatalf("%s listed without a version", it.Key)
				}
			}
			if page.Next == "" {
				break
			}
			opts.After = page.Next
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
			t.Fatalf("%d pages, %d keys; first %v", pages, len(got), got[:min(3, len(got))])
		}
		page, err := s.List(ctx, "l/24", &store.ListOptions{After: "l/245"})
		if err != nil || len(page.Items) != 4 || page.Items[0].Key != "l/246" {
			t.Fatalf("prefix+After: %v %v", page.Items, err)
		}
	})
}

// TestClosed: calls after Close fail with ErrClosed.
func TestClosed(t *testing.T) {
	s, err := s3store.Open(context.Background(), "b", "p", &s3store.Options{Endpoint: "http://127.0.0.1:1", Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Get(context.Background(), "k"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}
