package filestore

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"syscall"
)

// notifier turns inotify(7) events on bucket directories into wakeups, so
// that WaitChange learns of writes by any process without polling. Every
// publication, deletion and transaction changes a name in the key's bucket
// directory (rename, link, unlink), and inotify reports exactly those.
// One inotify instance serves a whole Store; a watch, once added for a
// bucket, stays until Close (buckets are never removed either).
type notifier struct {
	f  *os.File // the inotify instance, read by run
	fd int      // f's descriptor (f.Fd would make it blocking)

	start sync.Once // run starts with the first watch, not at Open

	mu      sync.Mutex
	buckets map[string]*bucketWatch
	byWD    map[int32]*bucketWatch
	done    bool
}

type bucketWatch struct {
	ch chan struct{} // closed and replaced on every event in the bucket
}

// inotifySupported: WaitChange waits on inotify, and Watch is declared.
const inotifySupported = true

const watchMask = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_DELETE |
	syscall.IN_MOVED_FROM | syscall.IN_ONLYDIR

// newNotifier returns nil when inotify is unavailable (no instances left,
// say); WaitChange then polls.
func newNotifier() *notifier {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	n := &notifier{
		f:       os.NewFile(uintptr(fd), "inotify"), // non-blocking: Read parks in the poller
		fd:      fd,
		buckets: make(map[string]*bucketWatch),
		byWD:    make(map[int32]*bucketWatch),
	}
	return n
}

// watch returns the wakeup channel of the bucket directory dir, adding
// the watch on first use. Take the channel before reading the state it
// guards, so no event between the read and the wait is lost.
func (n *notifier) watch(bucket, dir string) (<-chan struct{}, error) {
	n.start.Do(func() { go n.run() })
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return nil, errors.New("notifier closed")
	}
	if bw, ok := n.buckets[bucket]; ok {
		return bw.ch, nil
	}
	wd, err := syscall.InotifyAddWatch(n.fd, dir, watchMask)
	if err != nil {
		return nil, err
	}
	bw := n.byWD[int32(wd)] // the kernel returns the same wd for the same directory
	if bw == nil {
		bw = &bucketWatch{ch: make(chan struct{})}
		n.byWD[int32(wd)] = bw
	}
	n.buckets[bucket] = bw
	return bw.ch, nil
}

// run reads events until the instance is closed and wakes the waiters of
// each event's bucket; on a queue overflow it wakes everyone.
func (n *notifier) run() {
	buf := make([]byte, 64<<10)
	for {
		m, err := n.f.Read(buf)
		if err != nil {
			n.mu.Lock()
			n.done = true
			n.wakeAll()
			n.mu.Unlock()
			return
		}
		n.mu.Lock()
		for off := 0; off+syscall.SizeofInotifyEvent <= m; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			off += syscall.SizeofInotifyEvent + nameLen
			if mask&syscall.IN_Q_OVERFLOW != 0 {
				n.wakeAll()
			} else if bw := n.byWD[wd]; bw != nil {
				n.wake(bw)
			}
		}
		n.mu.Unlock()
	}
}

func (n *notifier) wake(bw *bucketWatch) {
	close(bw.ch)
	bw.ch = make(chan struct{})
}

func (n *notifier) wakeAll() {
	for _, bw := range n.byWD {
		n.wake(bw)
	}
}

// close stops run (its Read fails) and every later watch.
func (n *notifier) close() error {
	n.mu.Lock()
	n.done = true
	n.mu.Unlock()
	return n.f.Close()
}
