package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// Checkpoints: what makes bbolt without its own fsync safe.
//
// Between checkpoints bbolt commits without syncing. A process crash
// (SIGKILL) leaves those commits in the page cache, but a power loss may
// write bbolt's newest meta page without the pages it points to: bbolt
// keeps no checksum of its pages, so such a file would open as a damaged
// tree. The engine therefore never trusts bbolt's meta pages after a crash.
// Instead:
//
//  1. A checkpoint fdatasyncs the bbolt file, so the tree of the last
//     commit C and its meta page are durable, and saves a copy of C's meta
//     page, with the log sequence number C includes, in a checkpoint slot
//     (dir/wal/ckpt.0 or ckpt.1, written in turn in place, CRC-checked).
//  2. It keeps a read transaction open at C until the next checkpoint is
//     saved. bbolt never reuses a page that an open read transaction can
//     see, so no later unsynced commit overwrites a page of C's tree.
//  3. Open writes the newest valid slot's meta page back over both of
//     bbolt's meta pages before opening bbolt: the file is exactly C again,
//     whatever the crash left. It then replays every log record after C's
//     sequence number (stored in bbolt's meta bucket by every commit) in one
//     bbolt transaction, and checkpoints.
//
// A crash at any point leaves the previous slot valid and the log records
// after it in place: the log files are reused only once the checkpoint that
// covers their records is saved.
//
// The open read transaction blocks bbolt from growing its memory map (a
// remap waits for readers), so the map is sized up front (walMmapSize);
// when the file nears it, the engine stops using the log for the rest of
// its life and commits with bbolt's own fsyncs (see Engine.leaveLog).

const (
	ckptMagic  = "LKCKPT01"
	ckptHeader = 8 + 8 + 8 + 4 + 4 // magic, seq, txid, page size, crc
	// walMmapSize is bbolt's initial memory map with the log: the file may
	// grow to half of it before the engine leaves the log. It is address
	// space, not memory: 16 GiB on 64-bit platforms, 1 GiB on 32-bit ones.
	walMmapSize = 1 << (30 + 4*(^uint(0)>>63))
	// bbolt's meta page layout (go.etcd.io/bbolt internal/common): a
	// 16-byte page header, then magic at 16 and txid at 64.
	metaMagicOff = 16
	metaTxidOff  = 64
	boltMagic    = 0xED0CDAED
)

var errNoCheckpoint = errors.New("engine: no checkpoint")

func ckptPath(dir string, n int) string {
	return filepath.Join(walDir(dir), fmt.Sprintf("ckpt.%d", n))
}

// checkpoint is a saved bbolt meta page and what it covers.
type checkpoint struct {
	seq  uint64 // the last log record the commit includes
	txid uint64 // bbolt's transaction id of that commit
	page []byte // its meta page, as bbolt wrote it
}

func (c checkpoint) encode() []byte {
	b := make([]byte, 0, ckptHeader+len(c.page))
	b = append(b, ckptMagic...)
	b = binary.LittleEndian.AppendUint64(b, c.seq)
	b = binary.LittleEndian.AppendUint64(b, c.txid)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.page)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, c.page...)
	binary.LittleEndian.PutUint32(b[28:], ckptCRC(b))
	return b
}

func ckptCRC(b []byte) uint32 {
	c := crc32.Update(0, castagnoli, b[:28])
	return crc32.Update(c, castagnoli, b[ckptHeader:])
}

func decodeCheckpoint(b []byte) (checkpoint, bool) {
	if len(b) < ckptHeader || string(b[:8]) != ckptMagic {
		return checkpoint{}, false
	}
	n := int(binary.LittleEndian.Uint32(b[24:]))
	if n < metaTxidOff+8 || len(b) < ckptHeader+n {
		return checkpoint{}, false
	}
	b = b[:ckptHeader+n]
	if binary.LittleEndian.Uint32(b[28:]) != ckptCRC(b) {
		return checkpoint{}, false
	}
	c := checkpoint{seq: binary.LittleEndian.Uint64(b[8:]), txid: binary.LittleEndian.Uint64(b[16:]),
		page: append([]byte(nil), b[ckptHeader:]...)}
	if !validMetaPage(c.page, c.txid) {
		return checkpoint{}, false
	}
	return c, true
}

// validMetaPage checks that page looks like bbolt's meta page of txid (the
// layout this engine was written against).
func validMetaPage(page []byte, txid uint64) bool {
	return len(page) >= metaTxidOff+8 &&
		binary.LittleEndian.Uint32(page[metaMagicOff:]) == boltMagic &&
		binary.LittleEndian.Uint64(page[metaTxidOff:]) == txid
}

// loadCheckpoint returns the newest valid checkpoint of dir and its slot.
func loadCheckpoint(dir string) (checkpoint, int, error) {
	best, slot := checkpoint{}, -1
	for n := range 2 {
		b, err := os.ReadFile(ckptPath(dir, n))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return checkpoint{}, 0, fmt.Errorf("engine: read checkpoint: %w", err)
		}
		// The newest is the one with the greater transaction id: two
		// slots may carry the same seq (Open's own commits add no
		// record), and only the newest one's tree is still protected.
		if c, ok := decodeCheckpoint(b); ok && (slot < 0 || c.txid > best.txid) {
			best, slot = c, n
		}
	}
	if slot < 0 {
		return checkpoint{}, 0, errNoCheckpoint
	}
	return best, slot, nil
}

// saveCheckpoint writes c into slot n in place and fdatasyncs it. The
// slot's file keeps its size, so a full disk does not stop a checkpoint
// once the slot exists.
func saveCheckpoint(dir string, n int, c checkpoint) error {
	f, err := os.OpenFile(ckptPath(dir, n), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("engine: save checkpoint: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteAt(c.encode(), 0); err != nil {
		return fmt.Errorf("engine: save checkpoint: %w", err)
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("engine: save checkpoint: %w", err)
	}
	return nil
}

// restoreMeta writes c's meta page over both meta pages of the bbolt file
// at path and syncs it: bbolt then opens at c's commit.
func restoreMeta(path string, c checkpoint) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("engine: restore checkpoint: %w", err)
	}
	defer f.Close()
	for slot := range 2 {
		page := append([]byte(nil), c.page...)
		binary.LittleEndian.PutUint64(page[0:], uint64(slot)) // the page header's id
		if _, err := f.WriteAt(page, int64(slot*len(page))); err != nil {
			return fmt.Errorf("engine: restore checkpoint: %w", err)
		}
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("engine: restore checkpoint: %w", err)
	}
	return nil
}

// readMetaPage reads the meta page bbolt wrote for txid from the file.
func readMetaPage(f *os.File, pageSize int, txid uint64) ([]byte, error) {
	page := make([]byte, pageSize)
	if _, err := f.ReadAt(page, int64(txid%2)*int64(pageSize)); err != nil {
		return nil, fmt.Errorf("engine: read meta page: %w", err)
	}
	if !validMetaPage(page, txid) {
		return nil, fmt.Errorf("engine: meta page of transaction %d not where bbolt %s puts it", txid, "v1.5")
	}
	return page, nil
}
