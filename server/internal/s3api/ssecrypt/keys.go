package ssecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/latchkey/latchkey/internal/fsutil"
)

// KeySize is the size of the master key and of every data key (AES-256).
const KeySize = 32

// MasterKeyFile is the name, inside the data directory, of the master key
// generated when none is given.
const MasterKeyFile = "sse-master.key"

// ErrWrongKey reports a sealed body whose key ID is not the master key's:
// it was sealed under another master key.
var ErrWrongKey = errors.New("ssecrypt: sealed under another master key")

// ErrCorrupt reports a sealed body that does not authenticate: its
// header, a chunk or its length was altered, or it names another object.
var ErrCorrupt = errors.New("ssecrypt: sealed body does not authenticate")

// Keyring holds a master key's derived keys. Create it with New; it is
// safe for concurrent use.
type Keyring struct {
	wrap cipher.AEAD
	id   [8]byte
}

// New derives the keyring of a 32-byte master key.
func New(master []byte) (*Keyring, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("ssecrypt: master key is %d bytes, want %d", len(master), KeySize)
	}
	kek, err := hkdf.Key(sha256.New, master, nil, "latchkey sse-s3 v1 key-wrapping key", KeySize)
	if err != nil {
		return nil, err
	}
	id, err := hkdf.Key(sha256.New, master, nil, "latchkey sse-s3 v1 key id", 8)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &Keyring{wrap: aead}
	copy(k.id[:], id)
	return k, nil
}

// KeyID names the master key (16 hex digits) without revealing it.
func (k *Keyring) KeyID() string { return hex.EncodeToString(k.id[:]) }

// ParseKey reads a master key file's contents: exactly 32 raw bytes, or
// (surrounding white space ignored) 64 hex digits or the standard base64
// of 32 bytes.
func ParseKey(data []byte) ([]byte, error) {
	if len(data) == KeySize {
		if _, err := decodeText(data); err != nil {
			return append([]byte(nil), data...), nil
		}
	}
	return decodeText(data)
}

func decodeText(data []byte) ([]byte, error) {
	s := strings.TrimSpace(string(data))
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	return nil, fmt.Errorf("ssecrypt: a master key file holds 32 raw bytes, 64 hex digits or the base64 of 32 bytes")
}

// Load reads a master key file (see ParseKey) and derives its keyring.
func Load(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssecrypt: read master key: %w", err)
	}
	key, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return New(key)
}

// LoadOrCreate returns the keyring of the master key in file when file is
// set; otherwise of dataDir/MasterKeyFile, generated there (mode 0600,
// written durably: temporary file, fsync, rename, fsync of the directory)
// when missing. path is the file used; generated reports that this call
// created it.
func LoadOrCreate(dataDir, file string) (k *Keyring, path string, generated bool, err error) {
	if file != "" {
		k, err = Load(file)
		return k, file, false, err
	}
	path = filepath.Join(dataDir, MasterKeyFile)
	k, err = Load(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return k, path, false, err
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, path, false, err
	}
	if err := writeDurably(path, []byte(hex.EncodeToString(key)+"\n")); err != nil {
		return nil, path, false, err
	}
	k, err = New(key)
	return k, path, true, err
}

// writeDurably creates path with data, mode 0600, so that after a crash
// the file is either absent or whole. It refuses to replace a file.
func writeDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".sse-master-*.tmp")
	if err != nil {
		return fmt.Errorf("ssecrypt: create master key: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the link below, a no-op name removal
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("ssecrypt: create master key: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("ssecrypt: write master key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("ssecrypt: write master key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("ssecrypt: write master key: %w", err)
	}
	// A hard link, unlike rename, never replaces an existing key: a key
	// that appeared meanwhile is kept. Where the file system has no hard
	// links, rename (which would replace one; the data directory lock
	// keeps a second server out) installs it.
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return fmt.Errorf("ssecrypt: install master key: %w", err)
	} else if err != nil {
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("ssecrypt: install master key: %w", err)
		}
	}
	_ = os.Remove(tmp.Name())
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("ssecrypt: %w", err)
	}
	return nil
}
