package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/latchkey/latchkey/internal/fsutil"
)

// Names inside the store's directory. Value files live only under dataDir,
// with names that are hex digests, so no key can name any other file.
const (
	formatFile  = "latchkey-filestore" // format marker: "latchkey-filestore 1\nstripes N\n"
	counterFile = "counter"            // highest version reserved so far, decimal
	locksDir    = "locks"              // stripe-NN and counter lock files
	dataDir     = "data"               // <bucket>/<key digest>: value files
	tmpDir      = "tmp"                // staged values and other temporaries
	txnDir      = "txn"                // committed transaction journals
	rootBucket  = "_"                  // bucket of single-segment keys

	formatVersion = 1
)

// ErrCorrupt is the cause (never the Kind) of errors about a file in the
// store's directory that does not parse: a value file with a bad header or
// the wrong length, a journal that is not JSON. Its Kind is
// store.ErrTransient.
var ErrCorrupt = errors.New("corrupt file")

// keyHash is the SHA-256 of a key; it names the value file and picks the
// lock stripe.
type keyHash [sha256.Size]byte

func hashKey(key string) keyHash { return sha256.Sum256([]byte(key)) }

func (h keyHash) name() string { return hex.EncodeToString(h[:]) }

func (h keyHash) stripe(n int) int { return int(binary.BigEndian.Uint64(h[:8]) % uint64(n)) }

// bucketOf names the directory under dataDir that holds key: one per first
// path segment, so that List of a prefix containing '/' reads one bucket.
// Two first segments sharing a bucket would only cost List time, never
// correctness: List filters by the key stored in each file.
func bucketOf(key string) string {
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return rootBucket
	}
	return segmentBucket(key[:i])
}

func segmentBucket(seg string) string {
	h := sha256.Sum256([]byte("segment\x00" + seg))
	return hex.EncodeToString(h[:16])
}

// valuePath is the file holding key's current value.
func (s *Store) valuePath(key string) string {
	return filepath.Join(s.dir, dataDir, bucketOf(key), hashKey(key).name())
}

// Value file format: a fixed header, the key, then the value bytes.
//
//	magic   [8]byte  "LKFS\x01\n\x00\x00"
//	version uint64   big endian, never 0
//	length  uint64   big endian, length of the value
//	keylen  uint16   big endian
//	key     [keylen]byte
//	value   [length]byte
const (
	magic       = "LKFS\x01\n\x00\x00"
	fixedHeader = 8 + 8 + 8 + 2
	lengthOff   = 16 // offset of the length field, patched after streaming
	maxHeader   = fixedHeader + 1024
)

func encodeHeader(key string, version, length uint64) []byte {
	b := make([]byte, fixedHeader, fixedHeader+len(key))
	copy(b, magic)
	binary.BigEndian.PutUint64(b[8:], version)
	binary.BigEndian.PutUint64(b[lengthOff:], length)
	binary.BigEndian.PutUint16(b[24:], uint16(len(key)))
	return append(b, key...)
}

// header is what a value file says about itself.
type header struct {
	key     string
	version uint64
	length  uint64
	size    int64 // header bytes; the value starts here
}

// readHeader reads and checks the header of an open value file, including
// that the file is exactly as long as the header says.
func readHeader(f *os.File) (header, error) {
	buf := make([]byte, maxHeader)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return header{}, err
	}
	buf = buf[:n]
	if n < fixedHeader || string(buf[:8]) != magic {
		return header{}, fmt.Errorf("%w: %s: bad header", ErrCorrupt, f.Name())
	}
	h := header{
		version: binary.BigEndian.Uint64(buf[8:]),
		length:  binary.BigEndian.Uint64(buf[lengthOff:]),
	}
	klen := int(binary.BigEndian.Uint16(buf[24:]))
	if h.version == 0 || klen == 0 || fixedHeader+klen > n {
		return header{}, fmt.Errorf("%w: %s: bad header", ErrCorrupt, f.Name())
	}
	h.key = string(buf[fixedHeader : fixedHeader+klen])
	h.size = int64(fixedHeader + klen)
	fi, err := f.Stat()
	if err != nil {
		return header{}, err
	}
	if fi.Size() != h.size+int64(h.length) {
		return header{}, fmt.Errorf("%w: %s: %d bytes, header says %d", ErrCorrupt, f.Name(), fi.Size(), h.size+int64(h.length))
	}
	return h, nil
}

// openValue opens key's value file and reads its header. It returns an
// error matching fs.ErrNotExist when the key does not exist.
func (s *Store) openValue(key string) (*os.File, header, error) {
	f, err := os.Open(s.valuePath(key))
	if err != nil {
		return nil, header{}, err
	}
	h, err := readHeader(f)
	if err == nil && h.key != key {
		err = fmt.Errorf("%w: %s holds key %q (digest collision?)", ErrCorrupt, f.Name(), h.key)
	}
	if err != nil {
		f.Close()
		return nil, header{}, err
	}
	return f, h, nil
}

// current returns whether key exists and its version. The caller holds the
// key's stripe lock.
func (s *Store) current(key string) (bool, uint64, error) {
	f, h, err := s.openValue(key)
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	f.Close()
	return true, h.version, nil
}

// randomName returns prefix followed by 128 random bits in hex.
func randomName(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// createTemp creates a new file in dir with a random name.
func createTemp(dir, prefix string) (*os.File, error) {
	for range 10 {
		f, err := os.OpenFile(filepath.Join(dir, randomName(prefix)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("cannot create a temporary file in %s", dir)
}

// syncDir makes the entries of dir durable (after rename, link, unlink,
// mkdir in it).
func (s *Store) syncDir(dir string) error {
	if err := hook("sync dir"); err != nil {
		return err
	}
	if s.noSync {
		return nil
	}
	return fsutil.SyncDir(dir)
}

func (s *Store) syncFile(f *os.File) error {
	if err := hook("sync file"); err != nil {
		return err
	}
	if s.noSync {
		return nil
	}
	return f.Sync()
}

// ensureBucket creates key's bucket directory if it does not exist yet and
// makes its entry durable. Buckets are never removed, so once created a
// bucket stays usable without locks.
func (s *Store) ensureBucket(key string) error {
	b := bucketOf(key)
	if _, ok := s.buckets.Load(b); ok {
		return nil
	}
	// Sync dataDir even when another process made the bucket: its own
	// sync may not have happened yet, and our value must not outlive a
	// crash less than its directory does.
	if err := hook("mkdir"); err != nil {
		return err
	}
	err := os.Mkdir(filepath.Join(s.dir, dataDir, b), 0o755)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := s.syncDir(filepath.Join(s.dir, dataDir)); err != nil {
		return err
	}
	s.buckets.Store(b, true)
	return nil
}
