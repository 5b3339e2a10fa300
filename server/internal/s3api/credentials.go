package s3api

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/latchkey/latchkey/internal/fsutil"
)

// CredentialsFile is the name, inside the data directory, of the S3 key
// pair generated when none is configured.
const CredentialsFile = "s3-credentials.json"

type credFile struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
}

// LoadOrCreateCredentials returns the S3 key pair to accept. Given keys
// win. Otherwise the pair in dataDir/CredentialsFile is used, and created
// (once, mode 0600) when missing; generated reports that it was created
// by this call. path is the file used ("" for given keys). A created file
// is durable (its directory synced) before this returns.
func LoadOrCreateCredentials(dataDir, accessKey, secretKey string) (ak, sk, path string, generated bool, err error) {
	if accessKey != "" || secretKey != "" {
		if accessKey == "" || secretKey == "" {
			return "", "", "", false, errors.New("s3api: access key and secret key go together")
		}
		return accessKey, secretKey, "", false, nil
	}
	path = filepath.Join(dataDir, CredentialsFile)
	data, err := os.ReadFile(path)
	if err == nil {
		var c credFile
		if err := json.Unmarshal(data, &c); err != nil || c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return "", "", path, false, fmt.Errorf("s3api: credentials file %s is malformed", path)
		}
		return c.AccessKeyID, c.SecretAccessKey, path, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", "", path, false, fmt.Errorf("s3api: read credentials: %w", err)
	}
	c := credFile{AccessKeyID: "LK" + randomString(18, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
		SecretAccessKey: randomString(40, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")}
	out, _ := json.MarshalIndent(c, "", "  ")
	if err := writeDurably(path, append(out, '\n')); err != nil {
		return "", "", path, false, fmt.Errorf("s3api: write credentials: %w", err)
	}
	return c.AccessKeyID, c.SecretAccessKey, path, true, nil
}

func randomString(n int, alphabet string) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	var s strings.Builder
	for _, c := range b {
		s.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return s.String()
}

// writeDurably creates path with content, mode 0600, as a whole or not at
// all: a fsynced temporary file renamed into place, then the directory
// fsynced, so that a power cut can neither leave an empty file (which
// would stop the server from starting) nor lose a key pair already
// printed to the operator. The caller holds the data directory's lock.
func writeDurably(path string, content []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Dir(path))
}
