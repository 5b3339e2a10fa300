package s3api

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// by this call. path is the file used ("" for given keys).
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", "", path, false, fmt.Errorf("s3api: create credentials: %w", err)
	}
	if _, err := f.Write(append(out, '\n')); err != nil {
		f.Close()
		return "", "", path, false, fmt.Errorf("s3api: write credentials: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", "", path, false, fmt.Errorf("s3api: write credentials: %w", err)
	}
	if err := f.Close(); err != nil {
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
