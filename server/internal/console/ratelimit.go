package console

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// loginLimiter rate-limits login attempts per client address: a token
// bucket (golang.org/x/time/rate) of burst attempts, refilled by one every
// interval, per address (an IPv6 address counts as its /64, which one
// client usually owns whole). It tracks at most max addresses; when that
// many have attempts pending, a new address is refused too rather than
// forgetting another's count, so rotating addresses cannot reset a budget.
type loginLimiter struct {
	burst    int
	interval time.Duration
	max      int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newLoginLimiter(burst int, interval time.Duration, max int) *loginLimiter {
	return &loginLimiter{burst: burst, interval: interval, max: max, m: map[string]*rate.Limiter{}}
}

// allow takes one attempt for addr at now, or says how long until the
// next one is allowed.
func (l *loginLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[addr]
	if !ok {
		if len(l.m) >= l.max {
			for k, v := range l.m { // forget only those back at a full budget
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.m, k)
				}
			}
		}
		if len(l.m) >= l.max {
			return false, l.interval
		}
		lim = rate.NewLimiter(rate.Every(l.interval), l.burst)
		l.m[addr] = lim
	}
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// clientAddr is the address the limiter counts: the peer's IP (never a
// forwarded-for header, which the client writes), an IPv6 one cut to /64.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
