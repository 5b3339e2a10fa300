package lease

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/latchkey/latchkey/store"
)

// queuePrefix is where the waiting lines live: outside any lock's own
// prefix, like the epoch counters.
const queuePrefix = ".latchkey/lease-queue/"

// QueueKey returns the key of the waiting line of the lease at key. The
// line only orders the waiters and bounds their polling: acquisition goes
// through the lease record alone, so a queue record that is corrupt,
// deleted or ignored by a waiter changes who goes first, never how many
// hold the lease. Deleting it by hand is harmless: waiters put their
// tickets back, with their places.
func QueueKey(key string) string { return queuePrefix + key }

// movedPrefix is where the line-moved signals live (see MovedKey).
const movedPrefix = ".latchkey/lease-queue-moved/"

// MovedKey returns the key that a waiter served from the queue of the
// lease at key rewrites (a fresh nonce) as it leaves, on a store with a
// native watch: waiters far back in a line that has stood still for a
// TTL block on it rather than poll, and learn at once that the line
// moves again. Deleting it is harmless.
func MovedKey(key string) string { return movedPrefix + key }

// Queue is the waiting line stored at QueueKey(key), as JSON: the tickets
// of the waiters in the order they are served.
type Queue struct {
	// Next is the sequence number the next arriving ticket gets.
	Next uint64 `json:"next"`
	// Tickets are in ascending Seq order; the first is the head, the only
	// waiter that polls the lease record.
	Tickets []Ticket `json:"tickets"`
	// Pace is how long the line took to move one place lately: the time
	// the last waiter served stood at the head before it took the lease,
	// on its own monotonic clock (a duration, never a wall time),
	// averaged with the one before. Waiters that have not yet seen the
	// line move time their reads by it. Zero: not known.
	Pace time.Duration `json:"pace_ns,omitempty"`
	// Stamp is fresh on every write, so that every write has new bytes
	// (and a new version on stores whose version is a digest).
	Stamp string `json:"stamp"`
}

// Ticket is one waiter's place in a Queue.
type Ticket struct {
	// ID is random, fresh for each waiting Acquire.
	ID string `json:"id"`
	// Seq orders the tickets: arrival order.
	Seq uint64 `json:"seq"`
	// Holder is the waiter's Options.Holder, for people and tools.
	Holder string `json:"holder"`
	// Since is when the waiter arrived, on its own wall clock, for people
	// and tools only.
	Since time.Time `json:"since"`
	// Beat is fresh on every write of the ticket by its waiter. A head
	// whose beat other waiters see unchanged for TTL on their own
	// monotonic clocks is taken to be gone, and removed.
	Beat string `json:"beat"`
	// TTL is the waiter's TTL.
	TTL time.Duration `json:"ttl_ns"`
	// Pulled is set by a waiter that removed tickets taken for gone, on
	// the tickets that this moved into the window at once: their waiters
	// may not notice before their next read, which they timed for a line
	// moving one place at a time, so they get their whole TTL rather than
	// half. The waiter's next write of its ticket clears it.
	Pulled bool `json:"pulled,omitempty"`
}

// InspectQueue reads the waiting line of the lease at key. An absent line
// is an empty Queue; one that is not a queue record returns an error
// matching ErrCorrupt.
func InspectQueue(ctx context.Context, s store.Store, key string) (Queue, error) {
	e, err := s.Get(ctx, QueueKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return Queue{}, nil
	}
	if err != nil {
		return Queue{}, fmt.Errorf("lease: inspect queue %q: %w", key, err)
	}
	q, err := decodeQueue(key, e.Value)
	return q, err
}

// ParseQueue decodes the waiting line of the lease at key, stored at
// QueueKey(key) (b is its value), as this package reads it: an error
// matching ErrCorrupt when b is not a queue record. Like ParseRecord, it
// is for tools that read records themselves (the server's console).
func ParseQueue(key string, b []byte) (Queue, error) { return decodeQueue(key, b) }

func decodeQueue(key string, b []byte) (Queue, error) {
	var q Queue
	if err := json.Unmarshal(b, &q); err != nil {
		return Queue{}, fmt.Errorf("lease: queue of %q: %w: %v", key, ErrCorrupt, err)
	}
	if q.Stamp == "" {
		return Queue{}, fmt.Errorf("lease: queue of %q: %w: missing stamp", key, ErrCorrupt)
	}
	for _, t := range q.Tickets {
		if t.ID == "" {
			return Queue{}, fmt.Errorf("lease: queue of %q: %w: a ticket without id", key, ErrCorrupt)
		}
	}
	return q, nil
}

// encode gives q a fresh Stamp and returns its bytes.
func (q *Queue) encode() []byte {
	q.Stamp = newNonce()
	b, err := json.Marshal(q)
	if err != nil {
		panic(err) // strings, numbers and times always encode
	}
	return b
}

// index returns the position of the ticket id in q (0: the head), or -1.
func (q Queue) index(id string) int {
	return slices.IndexFunc(q.Tickets, func(t Ticket) bool { return t.ID == id })
}

// clone returns a copy of q whose tickets can be changed.
func (q Queue) clone() Queue {
	q.Tickets = slices.Clone(q.Tickets)
	return q
}

// put inserts t, or replaces the ticket with its ID, keeping Seq order. A
// ticket without a Seq gets the next one.
func (q *Queue) put(t Ticket) Ticket {
	if i := q.index(t.ID); i >= 0 {
		q.Tickets = slices.Delete(q.Tickets, i, i+1)
	}
	if t.Seq == 0 {
		t.Seq = max(q.Next, 1)
		if n := len(q.Tickets); n > 0 && q.Tickets[n-1].Seq >= t.Seq {
			t.Seq = q.Tickets[n-1].Seq + 1
		}
	}
	q.Next = max(q.Next, t.Seq+1)
	i, _ := slices.BinarySearchFunc(q.Tickets, t, func(a, b Ticket) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
	q.Tickets = slices.Insert(q.Tickets, i, t)
	return t
}

// remove deletes the ticket id and reports whether it was there.
func (q *Queue) remove(id string) bool {
	i := q.index(id)
	if i < 0 {
		return false
	}
	q.Tickets = slices.Delete(q.Tickets, i, i+1)
	return true
}
