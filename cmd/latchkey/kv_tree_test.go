package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKVRecurse(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "app/a", "1")
	c.ok("kv", "put", "app/b/c", "two")
	c.ok("kv", "put", "other", "x")
	if got := c.ok("kv", "get", "-recurse", "app/"); got != "app/a:1\napp/b/c:two\n" {
		t.Fatalf("get -recurse = %q", got)
	}
	if got := c.ok("kv", "get", "-recurse", "-base64", "app/b"); got != "app/b/c:dHdv\n" {
		t.Fatalf("get -recurse -base64 = %q", got)
	}
	if got := c.ok("kv", "get", "-recurse", "-detailed", "app/"); strings.Count(got, "\n\n") != 1 || strings.Count(got, "ModifyIndex") != 2 {
		t.Fatalf("get -recurse -detailed = %q", got)
	}
	c.fails(2, "-recurse and -cas", "kv", "delete", "-recurse", "-cas", "-modify-index=3", "app/")
	if got := c.ok("kv", "delete", "-recurse", "app/"); got != "Success! Deleted keys with prefix: app/\n" {
		t.Fatalf("delete -recurse printed %q", got)
	}
	if got := c.ok("kv", "list"); got != "other\n" {
		t.Fatalf("after delete -recurse app/: %q", got)
	}
}

// kv export prints consul kv export's format (a tab-indented JSON array of
// key, flags, base64 value); kv import reads it back byte for byte, also
// into latchkey serve through consul://.
func TestKVExportImport(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "app/a", "1")
	c.ok("kv", "put", "-base64", "app/bin", "AAEC/w==")
	out := c.ok("kv", "export", "app/")
	want := "[\n\t{\n\t\t\"key\": \"app/a\",\n\t\t\"flags\": 0,\n\t\t\"value\": \"MQ==\"\n\t},\n\t{\n\t\t\"key\": \"app/bin\",\n\t\t\"flags\": 0,\n\t\t\"value\": \"AAEC/w==\"\n\t}\n]\n"
	if out != want {
		t.Fatalf("export =\n%s\nwant\n%s", out, want)
	}
	srv := &cli{t: t, env: map[string]string{storeEnv: serveConsul(t, "imported")}}
	file := filepath.Join(t.TempDir(), "export.json")
	os.WriteFile(file, []byte(out), 0o644)
	if got := srv.ok("kv", "import", "@"+file); got != "Imported: app/a\nImported: app/bin\n" {
		t.Fatalf("import printed %q", got)
	}
	if got := srv.ok("kv", "get", "app/bin"); got != "\x00\x01\x02\xff" {
		t.Fatalf("imported value %q", got)
	}
	if got := srv.ok("kv", "export"); got != want {
		t.Fatalf("export after import through the server =\n%s", got)
	}
	var bad []map[string]any
	json.Unmarshal([]byte(want), &bad)
	bad[0]["flags"] = 42
	b, _ := json.Marshal(bad)
	if o := c.runIn(string(b), "kv", "import", "-"); o.code != 2 || !strings.Contains(o.stderr, "keeps no flags") {
		t.Fatalf("import with flags: %+v", o)
	}
}
