package failover

import "time"

// etcdAttemptTimeout is the workloads' etcdstore.Options.AttemptTimeout:
// the default (5 s) scaled to the cluster's 250 ms election timeout, as a
// user who tunes elections would scale it, so that a request sent to a
// stopped or cut-off member gives up on it well within a lock TTL.
const etcdAttemptTimeout = 2 * time.Second
