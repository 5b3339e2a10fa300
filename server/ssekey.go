package server

import (
	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
)

// loadSSEKey returns the master key of S3 server-side encryption: the one
// in cfg.SSEMasterKeyFile, or the one generated once into the data
// directory. It logs which, and what that protects.
func loadSSEKey(cfg Config) (*ssecrypt.Keyring, error) {
	k, path, generated, err := ssecrypt.LoadOrCreate(cfg.DataDir, cfg.SSEMasterKeyFile)
	if err != nil {
		return nil, err
	}
	if cfg.SSEMasterKeyFile != "" {
		cfg.Logger.Info("s3: SSE-S3 master key from --sse-master-key-file; objects written with x-amz-server-side-encryption: AES256 "+
			"(or into a bucket with default encryption) are encrypted at rest under it; without this file they cannot be read",
			"file", path, "key_id", k.KeyID())
		return k, nil
	}
	cfg.Logger.Warn("s3: SSE-S3 master key kept in the data directory: objects written with x-amz-server-side-encryption: AES256 "+
		"are encrypted at rest, which protects copies of the blobs, database and WAL that leave this key file behind, "+
		"but NOT anyone who can read the data directory itself (the key is next to the data); "+
		"keep the key elsewhere with --sse-master-key-file. Losing this file loses every encrypted object",
		"file", path, "key_id", k.KeyID(), "generated", generated)
	return k, nil
}
