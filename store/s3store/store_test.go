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
	"github.com/latchkey/latchkey/store/storetest"
)

// eachPeer runs f against our server and, when configured, Versity Gateway.
func eachPeer(t *testing.T, f func(t *testing.T, p peer)) {
	t.Run("latchkey", func(t *testing.T) { f(t, latchkeyPeer(t)) })
	t.Run("versitygw", func(t *testing.T) { f(t, versityPeer(t)) })
}

// TestObjectFormat: the stored object is the value, byte for byte (what
// `aws s3 cp` or any other reader gets), with the write's nonce in the
// metadata, and GetStream returns the same bytes. Identical values may
// then share an ETag, which the store declares (no UniqueVersions).
func TestObjectFormat(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		if s.Capabilities().UniqueVersions {
			t.Fatal("s3store declares UniqueVersions; ETags are digests of the bytes")
		}
		value := []byte("latchkey-s3store-v1 looks like a header but is a value\n\x00\xff")
		v, err := s.Put(ctx, "k", value, store.IfAbsent)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.sdk().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String(s.Prefix() + "k")})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(raw, value) {
			t.Fatalf("raw object %q, want the value %q as given", raw, value)
		}
		if n := out.Metadata["latchkey-nonce"]; len(n) != 32 {
			t.Fatalf("metadata nonce %q", n)
		}
		if e, err := s.Get(ctx, "k"); err != nil || !bytes.Equal(e.Value, value) || e.Version != v {
			t.Fatalf("Get = %q %s %v", e.Value, e.Version, err)
		}
		rc, gv, err := s.GetStream(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, value) || gv != v {
			t.Fatalf("GetStream = %q %s", got, gv)
		}
	})
}

// TestLegacyObject: an object written by an older s3store (a 53-byte
// header line carrying the nonce in front of the value, the same nonce in
// the metadata) reads as its value through Get and GetStream, keeps its
// ETag as version, and can be swapped with If-Match.
func TestLegacyObject(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		nonce := "0123456789abcdef0123456789abcdef"
		old := "latchkey-s3store-v1 " + nonce + "\nold value"
		put, err := p.sdk().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String("legacy"),
			Body: strings.NewReader(old), Metadata: map[string]string{"latchkey-nonce": nonce}})
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.Get(ctx, "legacy")
		if err != nil || string(e.Value) != "old value" || e.Version != store.Version(*put.ETag) {
			t.Fatalf("Get = %q %s %v; ETag %s", e.Value, e.Version, err, *put.ETag)
		}
		rc, v, err := s.GetStream(ctx, "legacy")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "old value" || v != e.Version {
			t.Fatalf("GetStream = %q %s", got, v)
		}
		if _, err := s.Put(ctx, "legacy", []byte("new value"), store.IfMatch(e.Version)); err != nil {
			t.Fatalf("CAS over a legacy object: %v", err)
		}
		if e, err := s.Get(ctx, "legacy"); err != nil || string(e.Value) != "new value" {
			t.Fatalf("after CAS: %q %v", e.Value, err)
		}
	})
}

// TestForeignObject: an object written by another tool reads whole.
func TestForeignObject(t *testing.T) {
	eachPeer(t, func(t *testing.T, p peer) {
		ctx := context.Background()
		s := p.open(t)
		if _, err := p.sdk().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String("plain"),
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
		for i := range 250 {
			want = append(want, fmt.Sprintf("l/%03d", i))
		}
		storetest.WriteKeys(t, ctx, s, append(want, "m"))
		items, pages := storetest.ListAll(t, ctx, s, "l/", 100)
		if got := storetest.Keys(items); fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
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
