package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// command is one top-level subcommand. run receives the arguments after
// the command's name.
type command struct {
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// commands is the table of subcommands; each lives in a file of its own.
func commands() map[string]command {
	return map[string]command{
		"version":  {"print the version", runVersion},
		"serve":    {"run the durable Consul KV- and S3-compatible server", runServe},
		"bench":    {"measure durable CAS throughput and latency (vs etcd with --etcd)", runBenchCmd},
		"kv":       {"read and write keys: get, put, delete, list, update, txn", runKV},
		"lock":     {"run a command under a lock; show or release a lock", runLock},
		"publish":  {"publish files atomically as one generation", runPublish},
		"snapshot": {"snapshot get: write the published files into a directory", runSnapshot},
		"gc":       {"delete superseded and abandoned publication generations", runGC},
		"probe":    {"check a live store really does what its backend declares", runProbe},
	}
}

const version = "0.1.0-dev"

func runVersion(ctx context.Context, e *env, args []string) error {
	fmt.Fprintln(e.stdout, "latchkey", version)
	return nil
}

func run(ctx context.Context, args []string, e *env) error {
	if len(args) == 0 {
		usage(e.stderr)
		return &exitError{code: exitUsage}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return nil
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return usagef("unknown command %q (see latchkey --help)", args[0])
	}
	return cmd.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	cmds := commands()
	var b strings.Builder
	b.WriteString("Usage: latchkey COMMAND [flags] [args]\n\nCommands:\n")
	for _, n := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(&b, "  %-10s %s\n", n, cmds[n].summary)
	}
	b.WriteString(`
Run 'latchkey COMMAND --help' for a command's flags. Flags take one dash or
two (-cas or --cas).

Store selection (every command that uses a store):
  --store URL or LATCHKEY_STORE: mem://, file:///dir, consul://host:port/prefix,
  s3://bucket/prefix?endpoint=URL&region=R, etcd://host:port[,host:port]/prefix,
  gs://bucket/prefix, azblob://container/prefix?endpoint=URL.
  Without either, a directory store in $XDG_STATE_HOME/latchkey/store (else
  ~/.local/state/latchkey/store) is used, so locks work across processes on
  one machine out of the box.

Exit codes:
  0  success
  1  the operation did not apply (CAS refused, lock not acquired or lost,
     too contended), or it failed
  2  bad command line
  N  with lock run --child-exit-code: the child's own exit code
`)
	io.WriteString(w, b.String())
}
