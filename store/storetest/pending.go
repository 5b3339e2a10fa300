package storetest

var (
	modelTests  []subtest
	linearTests []subtest
	faultTests  []subtest
	txnTests    []subtest
	watchTests  []subtest
)
