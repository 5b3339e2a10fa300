// Package failover proves latchkey's promises on a real etcd cluster
// while its leader dies, stalls and comes back.
//
// A Cluster is three etcd members, each a separate process (the test
// binary re-executed: a TestMain calls RunMemberIfChild first), on
// loopback ports, so that a member can be SIGKILLed and restarted on its
// data directory, or SIGSTOPped past a lock's TTL and continued. The
// workloads reach the members through a Proxy each, which can cut them
// off mid-request (answers swallowed, then connections reset), and the
// members reach each other through a peer Proxy each, which knows which
// member dialed each connection (X-Server-From), so that Partition can
// cut one member off from the others, both ways, and HealPartition
// restore the links. Every
// member is killed with the test (Pdeathsig on Linux, an explicit kill
// at Close, and the member's own exit when its stdin pipe closes).
//
// Run drives its workloads through the public library and the CLI, as
// users would, while faults chosen by a seed hit the leader (SIGKILL and
// restart, SIGSTOP and SIGCONT, a partition of the leader and its heal)
// or every client (cut off mid-request):
//
//   - lease: several Lockers (each on its own client, as separate
//     processes would be) take one lock in turn and, while holding it,
//     write a shared key with lease.FencedPut; each holding's [start, end]
//     on this process's monotonic clock and its token are logged;
//   - counter: cas.Update increments of one hot key from several
//     goroutines over two clients; each increment appends a unique id to
//     the value, and its outcome (acknowledged, refused, unknown) is
//     counted;
//   - publish: two writers commit generations of three objects, three
//     readers read snapshots whole;
//   - lock run (when RunOptions.LatchkeyBin is set): loops of the latchkey
//     binary's lock run, whose CMDs log start, beat and end lines with
//     their token to one file.
//
// The checkers (check.go) are pure functions of those histories and of
// the key's history read back from etcd, each with a test that feeds it a
// broken history: no two holdings overlap, tokens strictly increase in
// holding order, no fenced write with an older token is accepted after a
// newer one (in etcd's revision order, including writes whose caller saw
// an unknown outcome), every acknowledged increment is applied exactly
// once, none refused is applied, and the counter's value lies within
// [acked, acked+unknown]; the Gets and Puts of those keys, recorded at
// the store interface, form a linearizable history (porcupine, with puts
// of unknown outcome as maybe-happened); every snapshot read is one whole
// generation whose commit was not refused; no CMD line of an older token
// follows the start of a newer one. The longest stall of each workload
// after each fault is measured.
//
// Limits: members run without fsync unless LATCHKEY_FAILOVER_FSYNC=1 (a
// SIGKILL loses no acknowledged write either way, since the page cache
// survives a process kill; a power cut is not simulated). A member's
// clock is not ours to move, so clock steps are not covered.
package failover
