package consulapi

import (
	"errors"
	"github.com/hashicorp/consul/api"
	"sync/atomic"
)

var errLost = errors.New("lock lost while held")

// raiseMax raises m to n if n is larger.
func raiseMax(m *atomic.Int32, n int32) {
	for {
		cur := m.Load()
		if n <= cur || m.CompareAndSwap(cur, n) {
			return
		}
	}
}

type apiPair = api.KVPair
