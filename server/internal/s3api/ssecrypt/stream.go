package ssecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ChunkSize is the plaintext size of every chunk but the last.
const ChunkSize = 64 << 10

const (
	magic      = "LKSE"
	formatV1   = 1
	tagSize    = 16
	nonceSize  = 12
	fixedSize  = 4 + 1 + 8 // magic, version, key ID
	headerSize = fixedSize + nonceSize + KeySize + tagSize
)

// HeaderSize is the size of a sealed body's header.
const HeaderSize = headerSize

// chunks is the number of chunks of a body of n plaintext bytes.
func chunks(n int64) int64 {
	if n == 0 {
		return 1
	}
	return (n + ChunkSize - 1) / ChunkSize
}

// SealedSize is the size of the sealed form of n plaintext bytes.
func SealedSize(n int64) int64 { return headerSize + n + chunks(n)*tagSize }

// identity is the data key wrap's additional data: the header's fixed
// fields and the object's bucket and key, length-prefixed.
func identity(fixed []byte, bucket, key string) []byte {
	ad := make([]byte, 0, len(fixed)+8+len(bucket)+len(key))
	ad = append(ad, fixed...)
	ad = binary.BigEndian.AppendUint32(ad, uint32(len(bucket)))
	ad = append(ad, bucket...)
	ad = binary.BigEndian.AppendUint32(ad, uint32(len(key)))
	return append(ad, key...)
}

// chunkNonce and chunkAD authenticate a chunk's index and whether it is
// the last.
func chunkNonce(i uint64) []byte {
	var n [nonceSize]byte
	binary.BigEndian.PutUint64(n[:8], i)
	return n[:]
}

func chunkAD(i uint64, final bool) []byte {
	var ad [9]byte
	binary.BigEndian.PutUint64(ad[:8], i)
	if final {
		ad[8] = 1
	}
	return ad[:]
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Writer seals a body as it is written; Close seals the last chunk. It
// does not close the destination.
type Writer struct {
	dst    io.Writer
	aead   cipher.AEAD
	buf    []byte // plaintext of the chunk being filled
	out    []byte
	idx    uint64
	err    error
	closed bool
}

// NewWriter writes a sealed body's header to dst, under a fresh data key
// bound to bucket and key, and returns the writer of its plaintext.
func (k *Keyring) NewWriter(dst io.Writer, bucket, key string) (*Writer, error) {
	dek := make([]byte, KeySize)
	hdr := make([]byte, fixedSize+nonceSize, headerSize)
	copy(hdr, magic)
	hdr[len(magic)] = formatV1
	copy(hdr[len(magic)+1:fixedSize], k.id[:])
	if _, err := rand.Read(dek); err != nil {
		return nil, err
	}
	if _, err := rand.Read(hdr[fixedSize:]); err != nil {
		return nil, err
	}
	hdr = k.wrap.Seal(hdr, hdr[fixedSize:], dek, identity(hdr[:fixedSize], bucket, key))
	aead, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	if _, err := dst.Write(hdr); err != nil {
		return nil, err
	}
	return &Writer{dst: dst, aead: aead}, nil
}

// Write buffers p, sealing every chunk once the next byte shows it is not
// the last.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errors.New("ssecrypt: write after close")
	}
	n := 0
	for len(p) > 0 && w.err == nil {
		if len(w.buf) == ChunkSize {
			w.seal(false)
			continue
		}
		take := min(len(p), ChunkSize-len(w.buf))
		w.buf = append(w.buf, p[:take]...)
		p, n = p[take:], n+take
	}
	return n, w.err
}

func (w *Writer) seal(final bool) {
	w.out = w.aead.Seal(w.out[:0], chunkNonce(w.idx), w.buf, chunkAD(w.idx, final))
	_, w.err = w.dst.Write(w.out)
	w.buf, w.idx = w.buf[:0], w.idx+1
}

// Close seals the last chunk.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil {
		w.seal(true)
	}
	return w.err
}

// Seal returns the sealed form of a whole (small) body.
func (k *Keyring) Seal(plain []byte, bucket, key string) ([]byte, error) {
	b := &appendWriter{buf: make([]byte, 0, SealedSize(int64(len(plain))))}
	w, err := k.NewWriter(b, bucket, key)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.buf, nil
}

type appendWriter struct{ buf []byte }

func (a *appendWriter) Write(p []byte) (int, error) { a.buf = append(a.buf, p...); return len(p), nil }

// Reader yields a byte range of a sealed body's plaintext, decrypting only
// the chunks the range covers. A chunk that does not authenticate ends it
// with ErrCorrupt.
type Reader struct {
	src      io.ReaderAt
	aead     cipher.AEAD
	size     int64 // plaintext size of the whole body
	pos, end int64 // plaintext offsets still to serve
	cur      []byte
	raw      []byte
	plain    []byte
}

// OpenRange checks a sealed body's header (ErrWrongKey, ErrCorrupt),
// unwraps its data key for bucket and key, and returns the reader of the
// n plaintext bytes at off; size is the body's plaintext size.
func (k *Keyring) OpenRange(src io.ReaderAt, size int64, bucket, key string, off, n int64) (*Reader, error) {
	if size < 0 || off < 0 || n < 0 || off+n > size {
		return nil, fmt.Errorf("ssecrypt: range %d+%d outside a body of %d bytes", off, n, size)
	}
	hdr := make([]byte, headerSize)
	if _, err := src.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if string(hdr[:len(magic)]) != magic || hdr[len(magic)] != formatV1 {
		return nil, fmt.Errorf("%w: not a sealed body", ErrCorrupt)
	}
	if id := hdr[len(magic)+1 : fixedSize]; string(id) != string(k.id[:]) {
		return nil, fmt.Errorf("%w: sealed under master key %x, this server's is %s", ErrWrongKey, id, k.KeyID())
	}
	dek, err := k.wrap.Open(nil, hdr[fixedSize:fixedSize+nonceSize], hdr[fixedSize+nonceSize:], identity(hdr[:fixedSize], bucket, key))
	if err != nil {
		return nil, fmt.Errorf("%w: data key of %s/%s", ErrCorrupt, bucket, key)
	}
	aead, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	r := &Reader{src: src, aead: aead, size: size, pos: off, end: off + n}
	if n > 0 {
		// The first chunk is checked now, so that a body altered there is
		// refused before the caller answers anything.
		if err := r.load(off / ChunkSize); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Read serves the range's next bytes.
func (r *Reader) Read(p []byte) (int, error) {
	if len(r.cur) == 0 {
		if r.pos >= r.end {
			return 0, io.EOF
		}
		if err := r.load(r.pos / ChunkSize); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur, r.pos = r.cur[n:], r.pos+int64(n)
	return n, nil
}

// load decrypts chunk i and points cur at the part of it still to serve.
func (r *Reader) load(i int64) error {
	last := chunks(r.size) - 1
	plainLen := int64(ChunkSize)
	if i == last {
		plainLen = r.size - i*ChunkSize
	}
	if cap(r.raw) < int(plainLen)+tagSize {
		r.raw = make([]byte, plainLen+tagSize)
	}
	raw := r.raw[:plainLen+tagSize]
	if _, err := r.src.ReadAt(raw, headerSize+i*(ChunkSize+tagSize)); err != nil {
		return fmt.Errorf("%w: chunk %d: %v", ErrCorrupt, i, err)
	}
	plain, err := r.aead.Open(r.plain[:0], chunkNonce(uint64(i)), raw, chunkAD(uint64(i), i == last))
	if err != nil {
		return fmt.Errorf("%w: chunk %d", ErrCorrupt, i)
	}
	r.plain = plain
	start := i * ChunkSize
	r.cur = plain[r.pos-start : min(r.end-start, plainLen)]
	return nil
}
