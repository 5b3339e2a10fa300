package filestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// errWouldBlock: a non-blocking flock found the lock held.
var errWouldBlock = errors.New("lock is held")

// maxRecoveries bounds how many dead transactions one locker finishes
// before giving up. Each recovery removes a journal and a new journal on
// our stripes can only come from a process that crashes while holding
// them, so in practice one pass suffices.
const maxRecoveries = 16

// stripeLock is one lock of the store: an in-process gate taken first, so
// goroutines of this process queue cheaply and cancellably, then flock(2)
// on a lock file, which excludes other processes. The gate also guarantees
// that only one goroutine at a time uses fd, so one open file description
// per stripe is enough.
type stripeLock struct {
	gate chan struct{} // capacity 1: held while the stripe is locked here
	fd   int
}

// openLocks opens the lock files: locks/stripe-NN for each stripe, then
// locks/counter for the version counter.
func (s *Store) openLocks() error {
	s.locks = make([]stripeLock, s.stripes+1)
	for i := range s.locks {
		s.locks[i] = stripeLock{gate: make(chan struct{}, 1), fd: -1}
	}
	for i := range s.locks {
		name := fmt.Sprintf("stripe-%02d", i)
		if i == s.stripes {
			name = "counter"
		}
		fd, err := openLockFile(filepath.Join(s.dir, locksDir, name))
		if err != nil {
			return err
		}
		s.locks[i].fd = fd
	}
	return nil
}

func (s *Store) closeLocks() error {
	var first error
	for i := range s.locks {
		if s.locks[i].fd >= 0 {
			if err := closeFD(s.locks[i].fd); err != nil && first == nil {
				first = err
			}
			s.locks[i].fd = -1
		}
	}
	return first
}

// counterLock is the index in s.locks of the version counter's lock.
func (s *Store) counterLock() int { return s.stripes }

// acquireOne takes lock i, shared or exclusive, or returns ctx's error.
// A flock that would block waits in a helper goroutine so that ctx can
// interrupt the wait; if ctx wins, the helper keeps the gate until its
// flock returns and then releases both.
func (s *Store) acquireOne(ctx context.Context, i int, exclusive bool) error {
	l := &s.locks[i]
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := flock(l.fd, exclusive, true)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errWouldBlock) {
		<-l.gate
		return err
	}
	done := make(chan error, 1)
	go func() { done <- flock(l.fd, exclusive, false) }()
	select {
	case err := <-done:
		if err != nil {
			<-l.gate
		}
		return err
	case <-ctx.Done():
		s.inflight.Add(1) // keep Close from closing fd under the helper
		go func() {
			defer s.inflight.Done()
			if err := <-done; err == nil {
				funlock(l.fd)
			}
			<-l.gate
		}()
		return ctx.Err()
	}
}

func (s *Store) releaseOne(i int) {
	funlock(s.locks[i].fd)
	<-s.locks[i].gate
}

// acquire takes the given locks in ascending order (every locker does, so
// lockers never deadlock) or none of them.
func (s *Store) acquire(ctx context.Context, locks []int, exclusive bool) error {
	if !slices.IsSorted(locks) {
		panic("filestore: locks taken out of order")
	}
	for n, i := range locks {
		if err := s.acquireOne(ctx, i, exclusive); err != nil {
			s.release(locks[:n])
			return err
		}
	}
	return nil
}

func (s *Store) release(locks []int) {
	for n := len(locks) - 1; n >= 0; n-- {
		s.releaseOne(locks[n])
	}
}

// lock takes the stripes (sorted, distinct) and returns once no journal of
// a dead transaction touches them, finishing such transactions first.
// While we hold a stripe, a journal naming it cannot belong to a live
// process: a transaction writes its journal only after locking all its
// stripes, and removes it before unlocking them.
func (s *Store) lock(ctx context.Context, stripes []int, exclusive bool) (unlock func(), err error) {
	for range maxRecoveries {
		if err := s.acquire(ctx, stripes, exclusive); err != nil {
			return nil, err
		}
		name, err := s.pendingJournal(stripes)
		if err == nil && name == "" {
			return func() { s.release(stripes) }, nil
		}
		s.release(stripes)
		if err != nil {
			return nil, err
		}
		if err := s.recoverJournal(ctx, name); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("still finding dead transactions after %d recoveries", maxRecoveries)
}
