// Command fakeconsul stands in for the `consul` executable that the
// upstream github.com/hashicorp/consul/api tests start through
// github.com/hashicorp/consul/sdk/testutil, so that those tests run,
// unmodified, against latchkey's Consul-compatible API:
//
//	go build -o /tmp/fakebin/consul ./server/internal/consulapi/internal/fakeconsul
//	PATH=/tmp/fakebin:$PATH go test github.com/hashicorp/consul/api -run 'TestAPI_(Client|Lock|Semaphore|Session)'
//
// (run the second command from a scratch module that requires
// github.com/hashicorp/consul/api v1.34.5). It answers `consul version
// -format=json` and `consul agent -config-file F`: the agent serves
// consulapi over a fresh engine in the config's data_dir, on
// 127.0.0.1:<ports.http>, with the config's node_name and ACL master
// token. The test harness's readiness probe of Connect
// (/v1/agent/connect/ca/roots) is answered here, in this test tool only:
// latchkey has no Connect.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/latchkey/latchkey/server/internal/consulapi"
	"github.com/latchkey/latchkey/server/internal/engine"
)

type config struct {
	NodeName string `json:"node_name"`
	DataDir  string `json:"data_dir"`
	Ports    struct {
		HTTP int `json:"http"`
	} `json:"ports"`
	ACL struct {
		Enabled bool `json:"enabled"`
		Tokens  struct {
			Master string `json:"master"`
		} `json:"tokens"`
	} `json:"acl"`
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: consul version -format=json | consul agent -config-file F")
	}
	switch os.Args[1] {
	case "version":
		fmt.Println(`{"Version":"1.21.6","Revision":"latchkey","Prerelease":"","FIPS":"","BuildDate":"2025-01-01T00:00:00Z"}`)
	case "agent":
		fs := flag.NewFlagSet("agent", flag.ExitOnError)
		file := fs.String("config-file", "", "config JSON")
		fs.Parse(os.Args[2:])
		if err := agent(*file); err != nil {
			log.Fatal(err)
		}
	default:
		log.Fatalf("unsupported: %v", os.Args[1:])
	}
}

func agent(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cfg config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	e, err := engine.Open(cfg.DataDir, &engine.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer e.Close()
	opts := &consulapi.Options{NodeName: cfg.NodeName}
	if cfg.ACL.Enabled {
		opts.ACLToken = cfg.ACL.Tokens.Master
	}
	h, err := consulapi.New(e, opts)
	if err != nil {
		return err
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/v1/agent/connect/ca/roots", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Consul-Index", "1")
		fmt.Fprint(w, `{"ActiveRootID":"fake","TrustDomain":"11111111-2222-3333-4444-555555555555.consul","Roots":[{"ID":"fake","Active":true}]}`)
	})
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", cfg.Ports.HTTP), Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
