package server

import (
	"bytes"
	"math"
	"path"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
)

// DefaultGOGC is the GC percent `latchkey serve` runs with when GOGC is
// not set. The server's live heap is small (a few MB: connections, the
// engine's watchers, sessions) while every request leaves garbage, so at
// Go's default of 100 the collector runs a cycle every few hundred
// requests, and its mark workers take the idle CPU of the cores while it
// does. Measured with BenchmarkConsulCASPair/http/clients=64 (2 cores):
// GOGC=100 ran 5.5–6.5 cycles per 1000 GET+PUT pairs at 60–70 µs of GC
// CPU per pair, 200 ran 2.75 cycles at 12–37 µs, 400 one cycle at ~4 µs,
// 800 half a cycle at 3–10 µs. 400 takes nearly all of the gain for a
// heap that peaks at about 5× the live heap instead of 2×.
const DefaultGOGC = 400

// GCDefaults is what GCDefaultsFor decided for the Go runtime; zero
// fields leave the runtime's setting as it is.
type GCDefaults struct {
	// GOGC is the GC percent to set; 0 when GOGC is in the environment.
	GOGC int
	// MemoryLimit is the soft memory limit to set, in bytes; 0 when
	// GOMEMLIMIT is in the environment or no cgroup limit was found.
	MemoryLimit int64
}

// GCDefaultsFor decides the collector settings of a server process from
// its environment, never overriding what the user set: DefaultGOGC unless
// GOGC is set; and unless GOMEMLIMIT is set, a soft memory limit of 90% of
// the process's cgroup (v2) memory.max when there is one, so that the
// larger heap a higher GOGC allows makes the collector work harder near
// the container's limit instead of running into it. readFile reads
// /proc/self/cgroup and the cgroup's memory.max.
func GCDefaultsFor(getenv func(string) string, readFile func(string) ([]byte, error)) GCDefaults {
	var d GCDefaults
	if getenv("GOGC") == "" {
		d.GOGC = DefaultGOGC
	}
	if getenv("GOMEMLIMIT") == "" {
		if max := cgroupMemoryMax(readFile); max > 0 {
			d.MemoryLimit = max / 10 * 9
		}
	}
	return d
}

// Apply sets the runtime's GC percent and memory limit as d says.
func (d GCDefaults) Apply() {
	if d.GOGC != 0 {
		debug.SetGCPercent(d.GOGC)
	}
	if d.MemoryLimit != 0 {
		debug.SetMemoryLimit(d.MemoryLimit)
	}
}

// cgroupMemoryMax is the memory.max of this process's cgroup v2 (the
// "0::PATH" line of /proc/self/cgroup), or 0 when there is none, it is
// "max", or it cannot be read.
func cgroupMemoryMax(readFile func(string) ([]byte, error)) int64 {
	b, err := readFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		v, err := readFile(path.Join("/sys/fs/cgroup", path.Clean("/"+p), "memory.max"))
		if err != nil {
			return 0
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil || n <= 0 {
			return 0 // "max": no limit
		}
		return n
	}
	return 0
}

// gcPercent is the runtime's GC percent (GOGC; -1: off), memoryLimit
// its soft memory limit ("none" when unlimited), for the log.
func gcPercent() int64 { return int64(runtimeSample("/gc/gogc:percent")) }

func memoryLimit() string {
	if n := runtimeSample("/gc/gomemlimit:bytes"); n != math.MaxInt64 {
		return strconv.FormatUint(n, 10)
	}
	return "none"
}

func runtimeSample(name string) uint64 {
	s := []rtmetrics.Sample{{Name: name}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}
