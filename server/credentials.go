package server

import (
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/server/internal/s3api"
)

// StoredCredentials returns the S3 key pair that a server started on
// dataDir without --access-key/--secret-key generated and keeps there.
// It creates nothing: when the server has not run yet, the error wraps
// fs.ErrNotExist.
func StoredCredentials(dataDir string) (accessKey, secretKey string, err error) {
	if _, err := os.Stat(filepath.Join(dataDir, s3api.CredentialsFile)); err != nil {
		return "", "", err
	}
	ak, sk, _, _, err := s3api.LoadOrCreateCredentials(dataDir, "", "")
	return ak, sk, err
}
