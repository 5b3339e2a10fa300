package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"
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
		"kv":       {"read and write keys: get, put, delete, list, update, txn, export, import", runKV},
		"lock":     {"run a command under a lock; show or release a lock", runLock},
		"publish":  {"publish files atomically as one generation; publish current, publish list", runPublish},
		"snapshot": {"snapshot get: write the published files into a directory", runSnapshot},
		"gc":       {"delete superseded and abandoned publication generations", runGC},
		"probe":    {"check a live store really does what its backend declares", runProbe},
	}
}

const version = "0.1.0-dev"

// runVersion prints "latchkey VERSION", then the module version and the VCS
// revision the binary was built from, as the Go toolchain recorded them.
func runVersion(ctx context.Context, e *env, args []string) error {
	line := "latchkey " + version
	if bi, ok := debug.ReadBuildInfo(); ok {
		line += " (module " + bi.Main.Version
		rev, modified := "", ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if rev != "" {
			line += ", revision " + rev + modified
		}
		line += ", " + bi.GoVersion + ")"
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}

func run(ctx context.Context, args []string, e *env) error {
	if e.verbose == nil {
		e.verbose = new(bool)
	}
	args, e, err := globalFlags(args, e)
	if err != nil || args == nil {
		return err
	}
	if len(args) == 0 {
		usage(e.stderr)
		return &exitError{code: exitUsage}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(e.stdout)
		return nil
	case "help":
		if len(args) == 1 {
			usage(e.stdout)
			return nil
		}
		if args[1] == "exit-codes" {
			io.WriteString(e.stdout, exitCodesHelp)
			return nil
		}
		// latchkey help kv [put]: that command's own help.
		args = append(slices.Clip(args[1:]), "--help")
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return usagef("unknown command %q (see latchkey --help)", args[0])
	}
	if e.timeout == 0 {
		if v := e.getenv(timeoutEnv); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return usagef("$%s=%q: want a positive duration such as 10s", timeoutEnv, v)
			}
			e.timeout = d
		}
	}
	if e.timeout > 0 && !runsUntilStopped(args) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
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
Run 'latchkey COMMAND --help' (or 'latchkey help COMMAND') for a command's
flags. Flags take one dash or two (-cas or --cas), and may follow the
arguments (kv get KEY -detailed); after "--" everything is an argument.

Before COMMAND: --store URL (for any command), --timeout DUR (or
$LATCHKEY_TIMEOUT: the whole command, store requests included, gives up
after DUR; not serve, bench or lock run), --verbose (or $LATCHKEY_VERBOSE=1;
also a flag of every command), --version, --help.

Failures are one line in plain words ("store unreachable", "store answered
but refused", "outcome unknown: the write may or may not have applied");
--verbose adds the raw cause on a second, indented line ("  cause: ...").

Store selection (every command that uses a store):
  --store URL or LATCHKEY_STORE, one of:
` + storeURLsHelp("    ", 74) + `  Without either, a directory store in $XDG_STATE_HOME/latchkey/store (else
  ~/.local/state/latchkey/store) is used, so locks work across processes on
  one machine out of the box.

` + exitCodesHelp + `
'latchkey help exit-codes' prints the exit codes alone.
`)
	io.WriteString(w, b.String())
}

// timeoutEnv is the environment variable for --timeout.
const timeoutEnv = "LATCHKEY_TIMEOUT"

// runsUntilStopped reports the commands that --timeout does not bound:
// serve and lock run (and bench, which has its own --duration) run until
// they are stopped or their child ends.
func runsUntilStopped(args []string) bool {
	switch args[0] {
	case "serve", "bench":
		return true
	case "lock":
		return slices.Contains(args[1:], "run")
	}
	return false
}

// globalFlags takes the flags given before the command: --store URL (the
// store of any command that uses one, unless its own --store says
// otherwise), --version and --help. It returns the rest of args and the
// env to run them with; nil args means it already did all there was to do.
func globalFlags(args []string, e *env) ([]string, *env, error) {
	g := *e
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch name {
		case "h", "help":
			return args, &g, nil
		case "version":
			return nil, &g, runVersion(context.Background(), &g, nil)
		case "v", "verbose":
			*g.verbose = true
		case "store", "timeout":
			if !hasVal {
				if len(args) < 2 {
					return nil, &g, usagef("--%s needs a value: latchkey --store URL --timeout DUR COMMAND ...", name)
				}
				val, args = args[1], args[1:]
			}
			if name == "store" {
				g.store = val
				break
			}
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 {
				return nil, &g, usagef("--timeout %q: want a positive duration such as 10s", val)
			}
			g.timeout = d
		default:
			return nil, &g, usagef("%s: not a flag of latchkey itself (--store URL, --timeout DUR, --verbose, --version, --help); a command's flags go after its name", args[0])
		}
		args = args[1:]
	}
	return args, &g, nil
}
