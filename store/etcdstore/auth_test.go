package etcdstore

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/latchkey/latchkey/internal/testutil/etcdtest"
	"github.com/latchkey/latchkey/store"
)

// startAuthEtcd starts a second embedded etcd with auth on: user alice
// (password "pw") may read and write keys under "app/" only.
func startAuthEtcd(t *testing.T) string {
	t.Helper()
	// bcrypt's least cost: password hashing is slow under -race.
	e, err := etcdtest.Start(t.TempDir(), func(cfg *embed.Config) { cfg.BcryptCost = 4 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ep := e.Clients[0].Addr().String()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	steps := []func() error{
		func() error { _, err := c.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := c.RoleAdd(ctx, "root"); return err },
		func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := c.RoleAdd(ctx, "app"); return err },
		func() error {
			_, err := c.RoleGrantPermission(ctx, "app", "app/", clientv3.GetPrefixRangeEnd("app/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := c.UserAdd(ctx, "alice", "pw"); return err },
		func() error { _, err := c.UserGrantRole(ctx, "alice", "app"); return err },
		func() error { _, err := c.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}
	return ep
}

func TestAuth(t *testing.T) {
	ep := startAuthEtcd(t)
	ctx := t.Context()

	// A wrong password fails at Open, which authenticates.
	_, err := Open(ctx, &Options{Endpoints: []string{ep}, Username: "alice", Password: "wrong"})
	if !errors.Is(err, ErrPermissionDenied) || !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("Open with a wrong password: %v", err)
	}

	s := openTest(t, &Options{Endpoints: []string{ep}, Prefix: "app", Username: "alice", Password: "pw"})
	v, err := s.Put(ctx, "k", []byte("1"), store.IfAbsent)
	if err != nil {
		t.Fatalf("Put within alice's range: %v", err)
	}
	if e, err := s.Get(ctx, "k"); err != nil || e.Version != v {
		t.Fatalf("Get = %+v, %v", e, err)
	}
	if p, err := s.List(ctx, "", nil); err != nil || len(p.Items) != 1 {
		t.Fatalf("List = %+v, %v", p, err)
	}

	// Outside her range, and without any user: permission errors, never
	// conflicts or not-found.
	outside := openTest(t, &Options{Endpoints: []string{ep}, Prefix: "other", Username: "alice", Password: "pw"})
	anon := openTest(t, &Options{Endpoints: []string{ep}, Prefix: "app"})
	for name, op := range map[string]func() error{
		"Put outside": func() error { _, err := outside.Put(ctx, "k", nil, store.IfAbsent); return err },
		"Get outside": func() error { _, err := outside.Get(ctx, "k"); return err },
		"Txn outside": func() error {
			_, err := outside.Txn(ctx, []store.TxnOp{store.PutOp("k", nil, store.Unconditional)})
			return err
		},
		"Get anonymous":      func() error { _, err := anon.Get(ctx, "k"); return err },
		"WaitChange outside": func() error { return outside.WaitChange(ctx, "k", "") },
	} {
		if err := op(); !errors.Is(err, ErrPermissionDenied) || !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
