package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// cmdFlags is the flag set of one command or subcommand: flag's own output
// is discarded, -h prints the command's help and its flags to stdout and
// ends the command with exit 0 (errHelp), and a bad flag is a one-line
// usage error (exit 2) naming the command. kv, lock, publish, probe and
// the other commands build on it.
type cmdFlags struct {
	*flag.FlagSet
	e    *env
	help string // printed on -h before the flag defaults
}

// newCmdFlags returns the flags of command name ("publish", "kv put"),
// whose -h prints "Usage: latchkey NAME SYNOPSIS", the summary and the
// flags.
func newCmdFlags(e *env, name, synopsis, summary string) *cmdFlags {
	return newHelpFlags(e, name, fmt.Sprintf("Usage: latchkey %s %s\n\n%s\n\nFlags:\n", name, synopsis, summary))
}

// newHelpFlags returns the flags of command name whose -h prints help
// verbatim, then the flags.
func newHelpFlags(e *env, name, help string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cmdFlags{FlagSet: fs, e: e, help: help}
}

// parse parses args. On -h it prints the help to stdout and returns
// errHelp; a bad flag is a one-line usage error.
func (f *cmdFlags) parse(args []string) error {
	err := f.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(f.e.stdout, f.help)
		f.SetOutput(f.e.stdout)
		f.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usagef("%s: %v", f.Name(), err)
	}
	return nil
}
