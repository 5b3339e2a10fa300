package failover

import (
	"os"
	"testing"
)

// TestMain first lets a re-executed test binary serve as an etcd member.
func TestMain(m *testing.M) {
	RunMemberIfChild()
	os.Exit(m.Run())
}
