package azblobstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store/azblobstore"
)

// azuriteEnv names the Azurite blob endpoint that .ci/run starts, as a
// service URL: http://127.0.0.1:PORT/devstoreaccount1.
const azuriteEnv = "LATCHKEY_TEST_AZURITE"

// azurite returns the Azurite service URL (testutil.Peer: without it the
// test skips, and fails under CI=true).
func azurite(tb testing.TB) string {
	tb.Helper()
	return testutil.Peer(tb, azuriteEnv, "a running Azurite blob endpoint, e.g. http://127.0.0.1:10000/devstoreaccount1 (.ci/run starts one)")
}

func options(serviceURL, container, prefix string) *azblobstore.Options {
	return &azblobstore.Options{ServiceURL: serviceURL, Container: container, Prefix: prefix,
		AccountName: azblobstore.DevAccountName, AccountKey: azblobstore.DevAccountKey}
}

// adminTimeout bounds each container request of the helpers, so that a
// stalled emulator fails a test instead of hanging the package.
const adminTimeout = 30 * time.Second

// newContainer creates a fresh container on Azurite and deletes it at
// cleanup.
func newContainer(tb testing.TB, serviceURL string) string {
	tb.Helper()
	name := testutil.RandomName("lk-test-")
	s, err := azblobstore.Open(context.Background(), options(serviceURL, name, ""))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if _, err := s.Container().Create(ctx, nil); err != nil {
		tb.Fatalf("azurite: create container %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if _, err := s.Container().Delete(ctx, nil); err != nil {
			tb.Logf("azurite: delete container %s: %v", name, err)
		}
	})
	return name
}

// testCtx is a context for one test's own requests, bounded like
// storetest's subtests.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// open returns a store on a fresh container, with no key prefix (a prefix
// would shorten the longest key below store.MaxKeyLen).
func open(tb testing.TB, serviceURL string) *azblobstore.Store {
	tb.Helper()
	s, err := azblobstore.Open(context.Background(), options(serviceURL, newContainer(tb, serviceURL), ""))
	testutil.Opened(tb, s, err)
	return s
}
