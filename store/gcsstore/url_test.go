package gcsstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

func TestStoreURL(t *testing.T) {
	e := startedEmulator(t)
	bucket := e.bucket(t)
	ctx := t.Context()
	server := strings.TrimSuffix(e.endpoint, "/storage/v1/")
	for _, u := range []string{
		"gs://" + bucket + "/app/locks?no-compare-and-delete=1&endpoint=" + e.endpoint,
		"gs://" + bucket + "/app/locks?no-compare-and-delete=1&endpoint=" + server, // bare server address
	} {
		s, err := storeurl.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if s.Capabilities().CompareAndDelete {
			t.Errorf("%s: no-compare-and-delete=1 still claims CompareAndDelete", u)
		}
		if _, err := s.Put(ctx, "k", []byte("v"), store.Unconditional); err != nil {
			t.Fatalf("%s: Put: %v", u, err)
		}
		s.Close()
	}
	// The key landed under the URL's prefix.
	s, err := storeurl.Open(ctx, "gs://"+bucket+"?endpoint="+e.endpoint)
	testutil.Opened(t, s, err)
	if !s.Capabilities().CompareAndDelete {
		t.Error("a gs:// store without no-compare-and-delete does not claim CompareAndDelete")
	}
	if got, err := s.Get(ctx, "app/locks/k"); err != nil || string(got.Value) != "v" {
		t.Fatalf("Get(app/locks/k) through the bucket root = %+v, %v", got, err)
	}
}

// STORAGE_EMULATOR_HOST is honoured as the official client honours it: a gs://
// URL without endpoint= reaches the emulator it names.
func TestStoreURLEmulatorHost(t *testing.T) {
	e := startedEmulator(t)
	bucket := e.bucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(strings.TrimSuffix(e.endpoint, "/storage/v1/"), "http://"))
	ctx := t.Context()
	s, err := storeurl.Open(ctx, "gs://"+bucket+"/p")
	testutil.Opened(t, s, err)
	v, err := s.Put(ctx, "k", []byte("via env"), store.IfAbsent)
	if err != nil {
		t.Fatalf("Put through STORAGE_EMULATOR_HOST: %v", err)
	}
	got, err := s.Get(ctx, "k")
	if err != nil || got.Version != v || string(got.Value) != "via env" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

func TestStoreURLRejects(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"gs:///prefix", "needs a bucket"},
		{"gs://user@bucket/p", "without user info"},
		{"gs:bucket", "without user info"},
		{"gs://bucket/p?region=x", `unknown parameter "region"`},
		{"gs://bucket/p?endpoint=ftp://h/", "want http://host:port/storage/v1/"},
		{"gs://bucket/p?endpoint=http://h/&no-compare-and-delete=maybe", "want 1 or 0"},
		{"gs://bucket/bad%00prefix?endpoint=http://127.0.0.1:1/", "prefix"},
	} {
		s, err := storeurl.Open(t.Context(), tc.url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", tc.url)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want it to mention %q", tc.url, err, tc.want)
		}
	}
	// Open does not contact the server: a dead endpoint opens, and the
	// first operation fails with a transport error.
	s, err := storeurl.Open(t.Context(), "gs://bucket/p?endpoint=http://127.0.0.1:1/")
	if err != nil {
		t.Fatalf("Open contacted the server: %v", err)
	}
	defer s.Close()
	if _, err := s.Get(t.Context(), "k"); !errors.Is(err, store.ErrTransient) {
		t.Fatalf("Get from a dead endpoint: %v, want ErrTransient", err)
	}
}
