package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

// publishSubcommands are `publish current` and `publish list`; any other
// first argument is publish's own.
var publishSubcommands = map[string]func(ctx context.Context, e *env, args []string) error{
	"current": runPublishCurrent,
	"list":    runPublishList,
}

// openPublished reads the generation published under prefix in s;
// nothing published is cmd's own failure (exit 1), any other error is
// publish.Open's.
func openPublished(ctx context.Context, s store.Store, cmd, prefix string) (*publish.Snapshot, error) {
	snap, err := publish.Open(ctx, s, prefix)
	if errors.Is(err, publish.ErrNothingPublished) {
		return nil, failf("%s: nothing published under %q", cmd, prefix)
	}
	return snap, err
}

// runPublishCurrent prints the generation published under P, or with
// --json its manifest: generation, store version, lease token, files.
func runPublishCurrent(ctx context.Context, e *env, args []string) error {
	f := newCmdFlags(e, "publish current", "--prefix P [--json]",
		"Print the generation currently published under P (--json: with its files).")
	f.addHelp("", `  0   printed
  1   nothing published under P, or an error
  2   bad command line
`, "")
	storeFlag, prefix := addPublicationFlags(f.FlagSet)
	asJSON := f.Bool("json", false, "print the manifest as JSON")
	if err := f.parse(args); err != nil {
		return err
	}
	if *prefix == "" || f.NArg() != 0 {
		return usagef("publish current: usage: latchkey publish current --prefix P [--json]")
	}
	s, err := openStore(ctx, e, *storeFlag)
	if err != nil {
		return err
	}
	defer s.Close()
	snap, err := openPublished(ctx, s, "publish current", *prefix)
	if err != nil {
		return fmt.Errorf("publish current: %w", err)
	}
	if !*asJSON {
		fmt.Fprintln(e.stdout, snap.Generation())
		return nil
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{
		"generation": snap.Generation(), "version": snap.Version(), "token": snap.Token(), "files": snap.Files(),
	})
}

// runPublishList lists the generations under P: the current one, then
// every other with what it is (superseded, and when; abandoned; unfinished)
// and whether gc --grace D would delete it, or until when it is kept.
func runPublishList(ctx context.Context, e *env, args []string) error {
	f := newCmdFlags(e, "publish list", "--prefix P [--grace D] [--json]",
		`List the generations under P: the current one, and every other one with what
it is (superseded, and when; abandoned: a manifest no commit kept; unfinished:
no manifest yet) and whether gc --grace D would delete it now, or until when
it is kept.`)
	f.addHelp("", `  0   listed
  1   an error
  2   bad command line
`, "")
	storeFlag, prefix := addPublicationFlags(f.FlagSet)
	grace := f.Duration("grace", publish.DefaultGrace, "the grace gc would use")
	asJSON := f.Bool("json", false, "print the list as JSON")
	if err := f.parse(args); err != nil {
		return err
	}
	if *prefix == "" || f.NArg() != 0 || *grace <= 0 {
		return usagef("publish list: usage: latchkey publish list --prefix P [--grace D] [--json]")
	}
	s, err := openStore(ctx, e, *storeFlag)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := publish.GC(ctx, s, *prefix, &publish.GCOptions{Grace: *grace, DryRun: true})
	if err != nil {
		return fmt.Errorf("publish list: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"current": res.Current, "grace": grace.String(), "generations": res.Generations})
	}
	if res.Current != "" {
		fmt.Fprintf(e.stdout, "%s current\n", res.Current)
	}
	for _, g := range res.Generations {
		what := string(g.State)
		if g.State == publish.Superseded {
			what += " at " + g.Superseded.UTC().Format(time.RFC3339)
		}
		fate := "kept until " + g.GraceEnds.UTC().Format(time.RFC3339)
		if g.Delete {
			fate = "gc would delete"
		}
		fmt.Fprintf(e.stdout, "%s %s, %d objects, %s\n", g.ID, what, g.Objects, fate)
	}
	return nil
}
