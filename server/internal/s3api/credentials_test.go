package s3api

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadOrCreateCredentials(t *testing.T) {
	dir := t.TempDir()
	ak, sk, path, gen, err := LoadOrCreateCredentials(dir, "", "")
	if err != nil || !gen || ak == "" || len(sk) < 40 || path != filepath.Join(dir, CredentialsFile) {
		t.Fatalf("first call: %q %q %q %v %v", ak, sk, path, gen, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode: %v %v", st, err)
	}
	ak2, sk2, _, gen2, err := LoadOrCreateCredentials(dir, "", "")
	if err != nil || gen2 || ak2 != ak || sk2 != sk {
		t.Fatalf("second call must reuse the pair: %q %q %v %v", ak2, sk2, gen2, err)
	}
	if a, s, p, _, err := LoadOrCreateCredentials(dir, "given", "secret"); err != nil || a != "given" || s != "secret" || p != "" {
		t.Fatalf("given keys: %q %q %q %v", a, s, p, err)
	}
	if _, _, _, _, err := LoadOrCreateCredentials(dir, "only-ak", ""); err == nil {
		t.Fatal("half a key pair accepted")
	}
	os.WriteFile(path, []byte("{"), 0o600)
	if _, _, _, _, err := LoadOrCreateCredentials(dir, "", ""); err == nil {
		t.Fatal("malformed file accepted")
	}
}
