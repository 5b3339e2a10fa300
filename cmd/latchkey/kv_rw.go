package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

func runKVGet(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "get")
	detailed := f.Bool("detailed", false, "print Consul's field layout (CreateIndex, Flags, Key, LockIndex, ModifyIndex, Session, Value)")
	b64 := f.Bool("base64", false, "print the value base64-encoded, then a newline")
	recurse := f.Bool("recurse", false, "print every key under PREFIX as KEY:VALUE lines, as consul kv get -recurse")
	fenced := f.Bool("fenced", false, "read a value kv put -fenced wrote: print it without its fencing header")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := f.nargs(1-btoi(*recurse), 1); err != nil {
		return err
	}
	key := f.Arg(0)
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	if *recurse {
		ents, err := kvEntries(ctx, s, key)
		if err != nil {
			return fmt.Errorf("kv get: %w", err)
		}
		return printRecurse(e.stdout, ents, *detailed, *b64)
	}
	ent, err := s.Get(ctx, key)
	if err == nil && *fenced {
		ent.Value, _, ent.Version, err = lease.FencedGet(ctx, s, key)
	}
	if errors.Is(err, store.ErrNotFound) {
		return failf("kv get: no key exists at: %s", key)
	}
	if err != nil {
		return fmt.Errorf("kv get: %w", err)
	}
	if *b64 {
		ent.Value = []byte(base64.StdEncoding.EncodeToString(ent.Value))
	}
	if *detailed {
		return printDetailed(e.stdout, ent)
	}
	if *b64 {
		ent.Value = append(ent.Value, '\n')
	}
	// The value exactly as stored: unlike `consul kv get`, no newline is
	// added, so `kv get K > file` gives back the bytes `kv put K @file`
	// wrote.
	_, err = e.stdout.Write(ent.Value)
	return err
}

// printDetailed prints ent in the layout of `consul kv get -detailed`: a
// field name padded to 17 columns (Consul's tabwriter: the longest name,
// 11, plus 6), then the value. Only the fields the store has are printed:
// Key, ModifyIndex (the version, to pass back to -modify-index) and Value;
// a store keeps no CreateIndex, Flags, LockIndex or Session, so none is
// invented. Unlike Consul's tabwriter, the padding is fixed, so a tab in
// the key or value is printed as it is rather than realigned.
func printDetailed(w io.Writer, ent store.Entry) error {
	_, err := fmt.Fprintf(w, "%-17s%s\n%-17s%s\n%-17s%s\n",
		"Key", ent.Key,
		"ModifyIndex", ent.Version,
		"Value", ent.Value)
	return err
}

// casCondition turns -cas and -modify-index into a condition: VERSION
// means IfMatch(VERSION), 0 means IfAbsent, as in Consul's API; without
// -cas the write is unconditional. Each flag needs the other (Consul's
// CLI refuses -cas alone too), so a forgotten index is never taken to
// mean "create only".
func casCondition(f *kvFlags, useCAS bool, index string) (store.Condition, error) {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == "modify-index" })
	switch {
	case !useCAS && set:
		return store.Unconditional, usagef("kv %s: -modify-index needs -cas", f.name)
	case !useCAS:
		return store.Unconditional, nil
	case !set || index == "":
		return store.Unconditional, usagef("kv %s: -cas needs -modify-index=VERSION (the ModifyIndex of kv get -detailed; 0: only if the key does not exist)", f.name)
	case index == "0":
		return store.IfAbsent, nil
	}
	if u, err := storeURL(f.e, *f.store); err == nil && numericVersions(u) {
		if _, err := strconv.ParseUint(index, 10, 64); err != nil {
			return store.Unconditional, usagef("kv %s: -modify-index=%q: this store's versions are numbers; give the ModifyIndex kv get -detailed prints, e.g. -modify-index=17", f.name, index)
		}
	}
	return store.IfMatch(store.Version(index)), nil
}

func runKVPut(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "put")
	useCAS := f.Bool("cas", false, "write only if the key is unchanged since -modify-index")
	index := f.String("modify-index", "", "`VERSION` the key must still have (0: the key must not exist); needs -cas")
	b64 := f.Bool("base64", false, "VALUE (or the file or stdin it names) is base64; the decoded bytes are written")
	flags := f.Uint64("flags", 0, "Consul's opaque flags `N`: only 0, as no latchkey store keeps flags")
	fenced := f.Bool("fenced", false, "a fenced write (lease.FencedPut): refused if a newer fencing token has written KEY; the token is -token or $LATCHKEY_FENCING_TOKEN (lock run sets it); read back with kv get -fenced")
	tokenFlag := f.String("token", "", "fencing `TOKEN` for -fenced (default $LATCHKEY_FENCING_TOKEN)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *flags != 0 {
		return usagef("kv put: -flags %d: latchkey's stores keep no flags (only 0); nothing written", *flags)
	}
	if err := f.nargs(1, 2); err != nil {
		return err
	}
	cond, err := casCondition(f, *useCAS, *index)
	if err != nil {
		return err
	}
	token, err := fencingToken(e, *fenced, *useCAS, *tokenFlag)
	if err != nil {
		return err
	}
	key := f.Arg(0)
	value, err := readValue(e, f.Arg(1))
	if err != nil {
		return err
	}
	if *b64 {
		dec, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(value)))
		if err != nil {
			return usagef("kv put: -base64: the value is not base64: %v", err)
		}
		value = dec
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	wctx, cancel := settleCtx(ctx)
	if *fenced {
		_, err = lease.FencedPut(wctx, s, key, value, token)
	} else {
		_, err = s.Put(wctx, key, value, cond)
	}
	cancel()
	switch {
	case errors.Is(err, lease.ErrFenced):
		return failf("kv put: did not write to %s: fencing token %d is older than the newest that wrote it (a newer lock holder has written)", key, token)
	case mayHaveApplied(err):
		return unknownWrite(ctx, "kv put", "writing "+key, "latchkey kv get "+key, err)
	case errors.Is(err, store.ErrConflict) && cond.IsAbsent():
		return failf("kv put: did not write to %s: CAS performed with index=0 and key already exists", key)
	case errors.Is(err, store.ErrConflict):
		return failf("kv put: did not write to %s: CAS failed", key)
	case err != nil:
		return fmt.Errorf("kv put: %w", err)
	}
	fmt.Fprintf(e.stdout, "Success! Data written to: %s\n", key)
	return nil
}

// readValue returns the bytes VALUE stands for, as `consul kv put` reads
// them: "-" is stdin, "@FILE" is FILE's contents, "@@TEXT" is the literal
// "@TEXT", anything else is itself. Nothing is added or trimmed.
func readValue(e *env, arg string) ([]byte, error) {
	switch {
	case strings.HasPrefix(arg, "@@"):
		return []byte(arg[1:]), nil
	case strings.HasPrefix(arg, "@"):
		fh, err := os.Open(arg[1:])
		if err != nil {
			return nil, failf("kv put: %v", err)
		}
		defer fh.Close()
		return readCapped(fh, arg[1:])
	case arg == "-":
		return readCapped(e.stdin, "stdin")
	}
	return []byte(arg), nil
}

// readCapped reads r whole, refusing more than maxValueBytes.
func readCapped(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxValueBytes+1))
	if err != nil {
		return nil, fmt.Errorf("kv put: reading %s: %w", name, err)
	}
	if len(b) > maxValueBytes {
		return nil, failf("kv put: value in %s is larger than %d bytes", name, maxValueBytes)
	}
	return b, nil
}

func runKVDelete(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "delete")
	useCAS := f.Bool("cas", false, "delete only if the key is unchanged since -modify-index")
	index := f.String("modify-index", "", "`VERSION` the key must still have; needs -cas")
	recurse := f.Bool("recurse", false, "delete every key under PREFIX, each only if unchanged since listed (those that changed are kept and named)")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := f.nargs(1-btoi(*recurse), 1); err != nil {
		return err
	}
	if *recurse {
		if *useCAS || given(f.FlagSet, "modify-index") {
			return usagef("kv delete: -recurse and -cas do not go together (-recurse checks each key's own version)")
		}
		s, err := openStore(ctx, e, *f.store)
		if err != nil {
			return err
		}
		defer s.Close()
		return deleteRecurse(ctx, e, s, f.Arg(0))
	}
	cond, err := casCondition(f, *useCAS, *index)
	if err != nil {
		return err
	}
	if cond.IsAbsent() {
		return usagef("kv delete: cannot delete a key that does not exist; give -modify-index=VERSION (not 0) with -cas")
	}
	key := f.Arg(0)
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	wctx, cancel := settleCtx(ctx)
	err = s.Delete(wctx, key, cond)
	cancel()
	switch {
	case mayHaveApplied(err):
		return unknownWrite(ctx, "kv delete", "deleting "+key, "latchkey kv get "+key, err)
	case errors.Is(err, store.ErrConflict):
		return failf("kv delete: did not delete key %s: CAS failed", key)
	case err != nil:
		return fmt.Errorf("kv delete: %w", err)
	}
	fmt.Fprintf(e.stdout, "Success! Deleted key: %s\n", key)
	return nil
}

func runKVList(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "list")
	if err := f.parseArgs(args, 0, 1); err != nil {
		return err
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	for it, err := range store.All(ctx, s, f.Arg(0)) {
		if err != nil {
			return fmt.Errorf("kv list: %w", err)
		}
		if _, err := fmt.Fprintln(e.stdout, it.Key); err != nil {
			return err
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fencingTokenEnv is the variable lock run gives CMD its token in.
const fencingTokenEnv = "LATCHKEY_FENCING_TOKEN"

// fencingToken is kv put -fenced's token: -token, else
// $LATCHKEY_FENCING_TOKEN; 0 without -fenced.
func fencingToken(e *env, fenced, useCAS bool, flagToken string) (uint64, error) {
	switch {
	case !fenced && flagToken != "":
		return 0, usagef("kv put: -token needs -fenced")
	case !fenced:
		return 0, nil
	case useCAS:
		return 0, usagef("kv put: -fenced and -cas do not go together (a fenced write checks the token, not the version)")
	}
	from, v := "-token", flagToken
	if v == "" {
		from, v = "$"+fencingTokenEnv, e.getenv(fencingTokenEnv)
	}
	if v == "" {
		return 0, usagef("kv put: -fenced needs a token: run it under lock run (which sets $%s), or give -token N", fencingTokenEnv)
	}
	t, err := strconv.ParseUint(v, 10, 64)
	if err != nil || t == 0 {
		return 0, usagef("kv put: %s=%q: want a positive fencing token, e.g. -token 7", from, v)
	}
	return t, nil
}
