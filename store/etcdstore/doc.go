// Package etcdstore is the store contract over etcd v3, through the
// official client go.etcd.io/etcd/client/v3.
//
// Mapping:
//
//   - A Version is the key's mod_revision in decimal. etcd revisions are
//     global and only grow, so a version is never reused, not even by a
//     key deleted and created again.
//   - Get is a linearizable range read of one key.
//   - An unconditional Put is a plain put; its version is the revision
//     in the response header, which is the key's new mod_revision.
//     IfAbsent is Txn(If(CreateRevision(key) = 0)).Then(Put); IfMatch(v)
//     is Txn(If(ModRevision(key) = v)).Then(Put). Each Else reads the key
//     (keys only), so a conflict names the key's current version. A Txn
//     that does not succeed (Succeeded = false) is ErrConflict.
//   - Delete with IfMatch is Txn(If(ModRevision(key) = v)).Then(Delete);
//     a missing key has mod_revision 0 and so is a conflict.
//   - List is one range read per page (keys only, ascending, WithLimit);
//     pages continue after ListOptions.After.
//   - Txn (Capabilities.Transactions) is one etcd Txn holding every
//     compare and every write; see Store.Txn for how the failing op is
//     found. WaitChange (Capabilities.Watch) is an etcd watch from the
//     revision after a read, so no change is missed.
//
// Every key lives under Options.Prefix, so several stores can share one
// cluster.
//
// Limits: a value at most Options.MaxValueSize (default
// DefaultMaxValueSize, just under etcd's default --max-request-bytes of
// 1.5 MiB), and the keys and values of one Txn together as much; larger
// requests are refused before sending with ErrUnsupported, and a server
// configured smaller answers with ErrUnsupported wrapping ErrTooLarge. At
// most store.MaxTxnOps ops per Txn (etcd's --max-txn-ops default is the
// same 128). Each request waits at most Options.RequestTimeout (default
// 30 s) unless ctx ends sooner, and each attempt at most
// Options.AttemptTimeout (default 5 s): a read sent to a member that
// stopped answering is sent again (the balancer picks the next member),
// a write is ErrUnknownOutcome. Every request asks for a leader
// (WithRequireLeader), so a member cut off from the majority refuses it at
// once (ErrTransient). The client pings a silent connection that has a
// request in flight after 10 s and drops it after 3 s more without an
// answer, so the balancer stops using a paused or cut-off member.
//
// Guarantees: every read is linearizable (no serializable reads), every
// condition is checked by etcd atomically with its write, and a write
// acknowledged by etcd is committed by a quorum. Failures map onto the
// store error set in one function (see kindOf): throttling ("too many
// requests"), a lost leader, a quota alarm or a compacted revision are
// ErrTransient; a timeout, a broken connection or a done context during
// a write is ErrUnknownOutcome (the write may have been applied: re-read);
// permission and size failures are ErrUnsupported with ErrPermissionDenied
// or ErrTooLarge as the cause.
package etcdstore
