package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// cmdFlags is the flag set of one command or subcommand: flag's own output
// is discarded, -h prints the command's help and its flags to stdout and
// ends the command with exit 0 (errHelp), and a bad flag is a one-line
// usage error (exit 2) naming the command. kv, lock, publish, probe and
// the other commands build on it.
//
// Flags may also follow the arguments (kv get KEY -detailed), as long as
// they are flags of the command: a word after an argument that is not one
// of its flags is an argument ("-5" is a value), and everything after
// "--" is an argument. A "--" after the first argument stays in Args, so
// KEY -- CMD [ARGS...] reaches the command as written.
type cmdFlags struct {
	*flag.FlagSet
	e     *env
	help  string // printed on -h before the flag defaults
	after string // printed on -h after them (see helpText)
	args  []string
	// cmdAfter, when positive, is the count of arguments after which a
	// command line follows (kv update KEY [--] CMD...): from there on only
	// flags followed by "--" are taken as flags.
	cmdAfter int
}

// newCmdFlags returns the flags of command name ("publish", "kv put"),
// whose -h prints "Usage: latchkey NAME SYNOPSIS", the flags, then the
// summary; add examples and exit codes to its after.
func newCmdFlags(e *env, name, synopsis, summary string) *cmdFlags {
	f := newHelpFlags(e, name, fmt.Sprintf("Usage: latchkey %s %s\n\nFlags:\n", name, synopsis))
	f.after = "\n" + summary + "\n"
	return f
}

// helpText is the shape of every command's --help after its usage line
// and flags: one short paragraph, examples, the command's exit codes, and
// where the long explanation is (a page of docs/).
type helpText struct {
	synopsis string // after "latchkey COMMAND "
	about    string // one short paragraph
	examples string // indented command lines, "# comment" allowed
	exits    string // the command's exit code lines
	more     string // a page of docs/ and its section, or ""
}

// addHelp appends examples, exit codes and a pointer to docs (any may be
// "") to what -h prints after the flags, in helpText's shape.
func (f *cmdFlags) addHelp(examples, exits, more string) {
	f.after += strings.TrimPrefix(helpText{examples: examples, exits: exits, more: more}.tail(), "\n\n")
}

// tail is what --help prints after the flags.
func (h helpText) tail() string {
	var b strings.Builder
	b.WriteString("\n" + h.about + "\n")
	if h.examples != "" {
		b.WriteString("\nExamples:\n" + h.examples)
	}
	if h.exits != "" {
		b.WriteString("\nExit codes (all: latchkey help exit-codes):\n" + h.exits)
	}
	if h.more != "" {
		b.WriteString("\nMore: " + h.more + ".\n")
	}
	return b.String()
}

// newHelpFlags returns the flags of command name whose -h prints help
// verbatim, then the flags.
func newHelpFlags(e *env, name, help string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if e.verbose != nil {
		fs.BoolVar(e.verbose, "verbose", *e.verbose, "on failure, print the raw cause on a second line (also $LATCHKEY_VERBOSE=1)")
	}
	return &cmdFlags{FlagSet: fs, e: e, help: help}
}

// parse parses args. On -h it prints the help to stdout and returns
// errHelp; a bad flag is a one-line usage error.
func (f *cmdFlags) parse(args []string) error {
	f.args = nil
	for {
		if err := f.parseFlags(args); err != nil {
			return err
		}
		rest := f.FlagSet.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			// "--" ended the flags: the rest is arguments.
			if len(f.args) > 0 {
				f.args = append(f.args, "--")
			}
			f.args = append(f.args, rest...)
			return nil
		}
		// Arguments up to the next flag of this command.
		for len(rest) > 0 && (rest[0] == "--" || !f.isFlag(rest[0])) {
			if rest[0] == "--" && len(f.args) > 0 {
				f.args = append(f.args, rest...)
				return nil
			}
			f.args = append(f.args, rest[0])
			rest = rest[1:]
			if f.cmdAfter > 0 && len(f.args) == f.cmdAfter {
				return f.parseBeforeCmd(rest)
			}
		}
		if len(rest) == 0 {
			return nil
		}
		args = rest
	}
}

// parseBeforeCmd handles what follows the arguments before a command
// line: flags then "--" then CMD, or CMD right away.
func (f *cmdFlags) parseBeforeCmd(rest []string) error {
	i := slices.Index(rest, "--")
	if i <= 0 || !f.isFlag(rest[0]) {
		f.args = append(f.args, rest...)
		return nil
	}
	if err := f.parseFlags(rest[:i]); err != nil {
		return err
	}
	if f.FlagSet.NArg() > 0 {
		return usagef("%s: %q: flags go before KEY, or between KEY and --", f.Name(), f.FlagSet.Arg(0))
	}
	f.args = append(f.args, rest[i:]...)
	return nil
}

func (f *cmdFlags) parseFlags(args []string) error {
	err := f.FlagSet.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(f.e.stdout, f.help)
		f.SetOutput(f.e.stdout)
		f.PrintDefaults()
		io.WriteString(f.e.stdout, f.after)
		return errHelp
	}
	if err != nil {
		return usagef("%s: %v", f.Name(), err)
	}
	return nil
}

// isFlag reports whether word is one of this command's flags (or -h).
func (f *cmdFlags) isFlag(word string) bool {
	if len(word) < 2 || word[0] != '-' {
		return false
	}
	name := strings.TrimPrefix(word[1:], "-")
	name, _, _ = strings.Cut(name, "=")
	return name == "h" || name == "help" || f.Lookup(name) != nil
}

// Args, NArg and Arg are the arguments, flags taken out.
func (f *cmdFlags) Args() []string { return f.args }
func (f *cmdFlags) NArg() int      { return len(f.args) }
func (f *cmdFlags) Arg(i int) string {
	if i < 0 || i >= len(f.args) {
		return ""
	}
	return f.args[i]
}

// flagLike reports whether an argument looks like a flag, to tell a user
// who put an unknown flag after the arguments where flags go.
func flagLike(args []string) (string, bool) {
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a != "--" {
			return a, true
		}
	}
	return "", false
}
