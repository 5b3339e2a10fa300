package etcdstore

// Exported for the etcdstore_test package, which shares TestMain's
// embedded etcd.
var (
	EmbeddedEndpoint = func() string { return endpoint }
	StartAuthEtcd    = startAuthEtcd
)
