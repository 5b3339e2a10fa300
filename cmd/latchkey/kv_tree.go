package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/latchkey/latchkey/store"
)

// kvEntries reads every key under prefix with its value, in key order. A
// key deleted between the listing and its read is skipped.
func kvEntries(ctx context.Context, s store.Store, prefix string) ([]store.Entry, error) {
	var out []store.Entry
	for it, err := range store.All(ctx, s, prefix) {
		if err != nil {
			return nil, err
		}
		ent, err := s.Get(ctx, it.Key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ent)
	}
	return out, nil
}

// printRecurse prints entries as `consul kv get -recurse` does: KEY:VALUE
// a line, or with detailed each key's block, blank-line separated.
func printRecurse(w io.Writer, ents []store.Entry, detailed, b64 bool) error {
	for i, ent := range ents {
		if b64 {
			ent.Value = []byte(base64.StdEncoding.EncodeToString(ent.Value))
		}
		var err error
		switch {
		case detailed && i > 0:
			_, err = io.WriteString(w, "\n")
			if err == nil {
				err = printDetailed(w, ent)
			}
		case detailed:
			err = printDetailed(w, ent)
		default:
			_, err = fmt.Fprintf(w, "%s:%s\n", ent.Key, ent.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteRecurse deletes every key under prefix, each only if it still has
// the version it was listed with, so a key written meanwhile is kept and
// reported, one line per key.
func deleteRecurse(ctx context.Context, e *env, s store.Store, prefix string) error {
	var items []store.Item
	for it, err := range store.All(ctx, s, prefix) {
		if err != nil {
			return fmt.Errorf("kv delete: %w", err)
		}
		items = append(items, it)
	}
	refused := 0
	for _, it := range items {
		err := s.Delete(ctx, it.Key, store.IfMatch(it.Version))
		switch {
		case errors.Is(err, store.ErrConflict):
			refused++
			fmt.Fprintf(e.stderr, "latchkey: kv delete: did not delete key %s: changed since it was listed\n", it.Key)
		case err != nil:
			return fmt.Errorf("kv delete: %w", err)
		}
	}
	if refused > 0 {
		return failf("kv delete: %d of %d keys under %q changed meanwhile and were kept", refused, len(items), prefix)
	}
	fmt.Fprintf(e.stdout, "Success! Deleted keys with prefix: %s\n", prefix)
	return nil
}

// exportEntry is one element of `consul kv export`'s JSON array.
type exportEntry struct {
	Key   string `json:"key"`
	Flags uint64 `json:"flags"`
	Value string `json:"value"` // base64
}

func runKVExport(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "export")
	if err := f.parseArgs(args, 0, 1); err != nil {
		return err
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	ents, err := kvEntries(ctx, s, f.Arg(0))
	if err != nil {
		return fmt.Errorf("kv export: %w", err)
	}
	out := make([]exportEntry, len(ents))
	for i, ent := range ents {
		out[i] = exportEntry{Key: ent.Key, Value: base64.StdEncoding.EncodeToString(ent.Value)}
	}
	b, err := json.MarshalIndent(out, "", "\t") // as consul kv export
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

func runKVImport(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "import")
	if err := f.parseArgs(args, 1, 1); err != nil {
		return err
	}
	data, err := readValue(e, f.Arg(0))
	if err != nil {
		return err
	}
	var ents []exportEntry
	if err := json.Unmarshal(data, &ents); err != nil {
		return usagef("kv import: not the JSON of kv export: %v", err)
	}
	values := make([][]byte, len(ents))
	for i, ent := range ents {
		if values[i], err = base64.StdEncoding.DecodeString(ent.Value); err != nil {
			return usagef("kv import: %s: value is not base64: %v", ent.Key, err)
		}
		if ent.Flags != 0 {
			return usagef("kv import: %s: flags %d: this store keeps no flags (only 0); nothing imported", ent.Key, ent.Flags)
		}
		if err := store.ValidateKey(ent.Key); err != nil {
			return usagef("kv import: %v; nothing imported", err)
		}
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	for i, ent := range ents {
		if _, err := s.Put(ctx, ent.Key, values[i], store.Unconditional); err != nil {
			return fmt.Errorf("kv import: %d of %d keys imported: %w", i, len(ents), err)
		}
		fmt.Fprintf(e.stdout, "Imported: %s\n", ent.Key)
	}
	return nil
}
