package engine

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"
)

func testOps(n int) []walOp {
	return []walOp{
		{kind: opCreate, bucket: "x/new"},
		{kind: opPut, bucket: "kv", key: []byte(fmt.Sprintf("k%d", n)), value: bytes.Repeat([]byte{byte(n)}, n%7)},
		{kind: opDel, bucket: "tomb", key: []byte(fmt.Sprintf("k%d", n))},
		{kind: opPut, bucket: "meta", key: []byte("index"), value: u64(uint64(n))},
	}
}

func testBatch(n int) *walBatch {
	var b walBatch
	for _, op := range testOps(n) {
		b.op(op.kind, op.bucket, op.key, op.value)
	}
	return &b
}

func testLog(first, n int) ([]byte, []int) {
	var data []byte
	var ends []int
	for i := range n {
		b := testBatch(first + i)
		data = append(data, b.frame(uint64(first+i))...)
		ends = append(ends, len(data))
	}
	return data, ends
}

// A record reads back as written, ops in order.
func TestLogRecordRoundTrip(t *testing.T) {
	data, ends := testLog(1, 3)
	recs, end := readLog(data)
	if len(recs) != 3 || end != ends[2] {
		t.Fatalf("read %d records up to %d, want 3 up to %d", len(recs), end, ends[2])
	}
	for i, r := range recs {
		want := testOps(i + 1)
		if r.seq != uint64(i+1) || !reflect.DeepEqual(normal(r.ops), normal(want)) {
			t.Fatalf("record %d: seq %d ops %+v, want %+v", i, r.seq, r.ops, want)
		}
	}
}

// A torn tail, cut at any byte, stops the reader at the last whole
// record: never a partial one, never an error.
func TestLogTornTailAtEveryByte(t *testing.T) {
	data, ends := testLog(5, 3)
	for cut := range len(data) {
		recs, end := readLog(data[:cut])
		whole := 0
		for _, e := range ends {
			if e <= cut {
				whole++
			}
		}
		if len(recs) != whole {
			t.Fatalf("cut at %d: %d records, want the %d whole ones", cut, len(recs), whole)
		}
		if whole > 0 && end != ends[whole-1] || whole == 0 && end != 0 {
			t.Fatalf("cut at %d: end %d", cut, end)
		}
	}
}

// A corrupt byte anywhere in a record (a torn sector, garbage) ends the
// log before that record; a zeroed (preallocated) tail ends it too.
func TestLogCorruptRecordStopsReplay(t *testing.T) {
	data, ends := testLog(1, 3)
	for i := range len(data) {
		bad := bytes.Clone(data)
		bad[i] ^= 0x5a
		recs, _ := readLog(bad)
		want := 0
		for want < len(ends) && ends[want] <= i {
			want++
		}
		if len(recs) != want {
			t.Fatalf("byte %d flipped: %d records, want %d (the ones before it)", i, len(recs), want)
		}
	}
	recs, end := readLog(append(bytes.Clone(data), make([]byte, 4096)...))
	if len(recs) != 3 || end != len(data) {
		t.Fatalf("zero tail: %d records up to %d", len(recs), end)
	}
}

// A reused log file holds new records at its start and stale ones of an
// earlier round after them: the stale ones (lower seqs) are not read.
func TestLogStaleRecordsAfterReuseAreNotRead(t *testing.T) {
	old, _ := testLog(1, 10)
	fresh, _ := testLog(20, 2)
	data := bytes.Clone(old)
	copy(data, fresh)
	// What follows the fresh records is the middle of an old one or an
	// old record; either way the reader stops.
	recs, end := readLog(data)
	if len(recs) != 2 || recs[0].seq != 20 || recs[1].seq != 21 || end != len(fresh) {
		t.Fatalf("read %d records (end %d), want the 2 fresh ones", len(recs), end)
	}
	// Old records aligned right after the fresh ones are stale too.
	data = append(bytes.Clone(fresh), old...)
	if recs, _ := readLog(data); len(recs) != 2 {
		t.Fatalf("read %d records, want the 2 fresh ones", len(recs))
	}
}

// Replay takes the records after the checkpoint's seq from both files, in
// order, up to the first gap.
func TestReplayableMergesFilesAndStopsAtAGap(t *testing.T) {
	recs := func(seqs ...uint64) []walRecord {
		var out []walRecord
		for _, s := range seqs {
			out = append(out, walRecord{seq: s})
		}
		return out
	}
	seqs := func(rs []walRecord) []uint64 {
		var out []uint64
		for _, r := range rs {
			out = append(out, r.seq)
		}
		return out
	}
	for _, c := range []struct {
		files   [][]walRecord
		applied uint64
		want    []uint64
	}{
		{[][]walRecord{recs(4, 5, 6), recs(7, 8)}, 5, []uint64{6, 7, 8}},
		{[][]walRecord{recs(7, 8), recs(4, 5, 6)}, 3, []uint64{4, 5, 6, 7, 8}},
		{[][]walRecord{recs(4, 5), recs(7, 8)}, 3, []uint64{4, 5}}, // 6 lost: nothing after it
		{[][]walRecord{recs(1, 2), nil}, 2, nil},
		{[][]walRecord{recs(5, 6), nil}, 2, nil}, // 3 missing: nothing applies
	} {
		if got := seqs(replayable(c.files, c.applied)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("replayable(%v, %d) = %v, want %v", c.files, c.applied, got, c.want)
		}
	}
}

// A checkpoint slot reads back; a torn or foreign one is no checkpoint.
func TestCheckpointSlotRoundTrip(t *testing.T) {
	page := make([]byte, 4096)
	putLE32(page[metaMagicOff:], boltMagic)
	putLE64(page[metaTxidOff:], 42)
	c := checkpoint{seq: 7, txid: 42, page: page}
	b := c.encode()
	got, ok := decodeCheckpoint(b)
	if !ok || got.seq != 7 || got.txid != 42 || !bytes.Equal(got.page, page) {
		t.Fatalf("decode: %v %+v", ok, got)
	}
	for i := 0; i < len(b); i += 97 {
		bad := bytes.Clone(b)
		bad[i] ^= 1
		if _, ok := decodeCheckpoint(bad); ok {
			t.Fatalf("slot with byte %d flipped accepted", i)
		}
	}
	if _, ok := decodeCheckpoint(b[:len(b)-1]); ok {
		t.Fatal("torn slot accepted")
	}
	if _, ok := decodeCheckpoint(make([]byte, len(b))); ok {
		t.Fatal("zeroed slot accepted")
	}
}

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func putLE64(b []byte, v uint64) { putLE32(b, uint32(v)); putLE32(b[4:], uint32(v>>32)) }

// Of two valid checkpoint slots the newer bbolt transaction wins, also
// when both carry the same seq (Open commits without adding a record, and
// only the newest checkpoint's pages are still protected).
func TestNewestCheckpointSlotWins(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(walDir(dir), 0o700)
	page := func(txid uint64) []byte {
		p := make([]byte, 4096)
		putLE32(p[metaMagicOff:], boltMagic)
		putLE64(p[metaTxidOff:], txid)
		return p
	}
	if err := saveCheckpoint(dir, 0, checkpoint{seq: 5, txid: 10, page: page(10)}); err != nil {
		t.Fatal(err)
	}
	if err := saveCheckpoint(dir, 1, checkpoint{seq: 5, txid: 11, page: page(11)}); err != nil {
		t.Fatal(err)
	}
	c, slot, err := loadCheckpoint(dir)
	if err != nil || slot != 1 || c.txid != 11 {
		t.Fatalf("loaded slot %d txid %d (%v), want slot 1 at txid 11", slot, c.txid, err)
	}
}

// normal makes empty and nil byte slices equal for comparison.
func normal(ops []walOp) []string {
	var out []string
	for _, op := range ops {
		out = append(out, fmt.Sprintf("%d %s %q %q", op.kind, op.bucket, op.key, op.value))
	}
	return out
}
