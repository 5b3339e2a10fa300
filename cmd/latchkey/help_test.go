package main

import (
	"os"
	"strings"
	"testing"
)

// Every command's --help leads with its usage and flags, then one short
// paragraph, examples where it has them, and its exit codes; lock run's
// long explanation lives in docs/cli.md, which its help names; kv update
// says what it does with stdin.
func TestHelpShape(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"lock", "run"}, {"lock", "show"}, {"lock", "list"}, {"lock", "release"},
		{"kv", "get"}, {"kv", "put"}, {"kv", "delete"}, {"kv", "list"}, {"kv", "update"}, {"kv", "txn"}, {"kv", "export"}, {"kv", "import"},
		{"publish"}, {"publish", "current"}, {"publish", "list"}, {"snapshot", "get"}, {"gc"}, {"probe"}, {"serve"},
	} {
		name := strings.Join(args, " ")
		out := c.ok(append(args, "--help")...)
		paras := strings.Split(out, "\n\n")
		if !strings.HasPrefix(paras[0], "Usage: latchkey "+name) || strings.Count(paras[0], "\n") > 1 {
			t.Errorf("%s --help does not start with its usage line:\n%s", name, out)
			continue
		}
		if len(paras) < 2 || !strings.HasPrefix(paras[1], "Flags") {
			t.Errorf("%s --help: the flags do not follow the usage line:\n%s", name, out)
			continue
		}
		flagsEnd := strings.Index(out, "\n\n"+paras[2])
		rest := out[flagsEnd:]
		exits := strings.Index(rest, "\nExit codes")
		if exits < 0 {
			t.Errorf("%s --help lists no exit codes after its flags:\n%s", name, out)
			continue
		}
		about := strings.TrimSpace(strings.Split(rest, "\nExamples:")[0])
		about = strings.TrimSpace(strings.Split(about, "\nExit codes")[0])
		if n := strings.Count(about, "\n") + 1; n > 12 {
			t.Errorf("%s --help: %d lines of prose after the flags; want one short paragraph, the rest in docs/", name, n)
		}
	}
	run := c.ok("lock", "run", "--help")
	for _, want := range []string{"\nExamples:\n  latchkey lock run ", "  75  not acquired: another holder has it", "docs/cli.md, \"lock run in depth\""} {
		if !strings.Contains(run, want) {
			t.Errorf("lock run --help lacks %q:\n%s", want, run)
		}
	}
	if n := strings.Count(run, "\n"); n > 60 {
		t.Errorf("lock run --help is %d lines", n)
	}
	docs, err := os.ReadFile("../../docs/cli.md")
	if err != nil || !strings.Contains(string(docs), "## lock run in depth") || !strings.Contains(string(docs), "What dies with CMD, per OS") {
		t.Errorf("docs/cli.md lacks lock run's long form (%v)", err)
	}
	update := c.ok("kv", "update", "--help")
	for _, want := range []string{"kv update reads nothing from its own stdin: CMD's stdin is the\nvalue", "  74  the write was sent but never answered", "  N   CMD exited N"} {
		if !strings.Contains(update, want) {
			t.Errorf("kv update --help lacks %q:\n%s", want, update)
		}
	}
}
