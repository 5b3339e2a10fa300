package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// kvCommand is one subcommand of `latchkey kv`.
type kvCommand struct {
	args    string // the synopsis after "latchkey kv NAME"
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// kvCommands is the table of kv subcommands: one line each.
func kvCommands() map[string]kvCommand {
	return map[string]kvCommand{
		"get":    {"[-detailed] [-base64] [-recurse] KEY|PREFIX", "print a key's value, byte for byte (-detailed: Consul's field layout)", runKVGet},
		"put":    {"[-cas -modify-index=VERSION] [-base64] KEY [VALUE|-|@FILE]", "write a key, optionally only if unchanged", runKVPut},
		"delete": {"[-cas -modify-index=VERSION | -recurse] KEY|PREFIX", "delete a key, optionally only if unchanged", runKVDelete},
		"list":   {"[PREFIX]", "print the keys under a prefix, one per line", runKVList},
		"update": {"[-max-time DUR] [-max-attempts N] KEY -- CMD [ARGS...]", "rewrite a key through CMD, retrying on conflict", runKVUpdate},
		"txn":    {"FILE|-", "apply Consul /v1/txn-shaped KV operations all or nothing", runKVTxn},
		"export": {"[PREFIX]", "print the keys under a prefix as consul kv export's JSON", runKVExport},
		"import": {"@FILE|-|JSON", "write the keys of kv export's (or consul kv export's) JSON", runKVImport},
	}
}

// maxValueBytes bounds a value read from stdin or from a kv update
// command's output.
const maxValueBytes = 64 << 20

func runKV(ctx context.Context, e *env, args []string) error {
	// --store may also come before the subcommand: kv --store URL get KEY.
	top := flag.NewFlagSet("kv", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	storeURL := addStoreFlag(top)
	err := top.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		kvUsage(e.stdout)
		return nil
	case err != nil:
		return usagef("kv: %v", err)
	case top.NArg() == 0:
		kvUsage(e.stderr)
		return &exitError{code: exitUsage}
	}
	args = top.Args()
	if args[0] == "help" {
		kvUsage(e.stdout)
		return nil
	}
	cmd, ok := kvCommands()[args[0]]
	if !ok {
		return usagef("kv: unknown subcommand %q (see latchkey kv --help)", args[0])
	}
	sub := args[1:]
	if *storeURL != "" {
		// The subcommand's own --store, parsed later, still wins.
		sub = append([]string{"--store=" + *storeURL}, sub...)
	}
	return cmd.run(ctx, e, sub)
}

func kvUsage(w io.Writer) {
	cmds := kvCommands()
	var b strings.Builder
	b.WriteString("Usage: latchkey kv SUBCOMMAND [flags] [args]\n\nRead and write keys of a store, with Consul-style check-and-set.\n\n")
	for _, n := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(&b, "  kv %s %s\n      %s\n", n, cmds[n].args, cmds[n].summary)
	}
	b.WriteString(`
Every subcommand takes --store URL, before or after its name (default
$LATCHKEY_STORE, else the directory store in $XDG_STATE_HOME/latchkey/store,
else ~/.local/state/latchkey/store). Flags take one dash or two, before or
after the arguments ("--" ends them). VERSION is the ModifyIndex line of 'kv get -detailed';
-modify-index=0 means "only if the key does not exist". Values read from
stdin or from an update command are limited to 64 MiB.

Values round-trip byte for byte: kv get prints the stored bytes and adds no
newline (-base64 prints them base64-encoded, then a newline). kv put's
VALUE "-" reads stdin, "@FILE" reads FILE, "@@TEXT" is the literal "@TEXT";
-base64 decodes what VALUE gives. kv update writes CMD's stdout exactly as
printed: a trailing newline from echo is kept (use printf to leave it out).

kv update runs CMD with the key's value on stdin (empty when absent) and
writes CMD's stdout back only if the key is unchanged; otherwise it reads
the key again and reruns CMD, backing off, for up to -max-time (default
30s) and, when given, at most -max-attempts times.

kv update reads nothing from its own stdin: CMD's stdin is the value.

Exit codes (all: latchkey help exit-codes):
  0   done
  1   not applied (CAS failed, too contended), key missing, or an error
  2   bad command line (-modify-index=abc on a store with numeric versions)
  74  put, delete, update, txn: the write was sent but never answered (timed
      out, or interrupted and not answered within 3s): it may or may not
      have applied; read the key before retrying
  N   kv update: CMD failed with exit code N; nothing was written
`)
	io.WriteString(w, b.String())
}

// errHelp ends a command that printed its help on request: exit 0.
var errHelp = &exitError{code: exitOK}

// kvFlags is the flag set of one kv subcommand, with --store.
type kvFlags struct {
	*cmdFlags
	name  string
	store *string
}

func newKVFlags(e *env, name string) *kvFlags {
	c := kvCommands()[name]
	f := newCmdFlags(e, "kv "+name, c.args, c.summary+".")
	f.after = kvHelp(name, c.summary)
	return &kvFlags{cmdFlags: f, name: name, store: addStoreFlag(f.FlagSet)}
}

// parseArgs parses args and checks that min to max arguments remain.
func (f *kvFlags) parseArgs(args []string, min, max int) error {
	if err := f.parse(args); err != nil {
		return err
	}
	return f.nargs(min, max)
}

// nargs checks the count of positional arguments.
func (f *kvFlags) nargs(min, max int) error {
	if n := f.NArg(); n > max {
		if w, ok := flagLike(f.Args()[1:]); ok {
			return usagef("kv %s: %s is not a flag of kv %s; flags go before KEY", f.name, w, f.name)
		}
	}
	if n := f.NArg(); n < min || n > max {
		return usagef("kv %s: %d arguments; usage: latchkey kv %s %s", f.name, n, f.name, kvCommands()[f.name].args)
	}
	return nil
}
