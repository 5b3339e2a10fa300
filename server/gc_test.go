package server

import (
	"errors"
	"io/fs"
	"testing"
)

func TestGCDefaultsNeverOverrideTheEnvironment(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	container := files(map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "1000000000\n"})
	service := files(map[string]string{"/proc/self/cgroup": "0::/system.slice/latchkey.service\n",
		"/sys/fs/cgroup/system.slice/latchkey.service/memory.max": "max\n"})
	v1 := files(map[string]string{"/proc/self/cgroup": "4:memory:/x\n1:cpu:/\n"})
	for _, c := range []struct {
		name string
		env  map[string]string
		read func(string) ([]byte, error)
		want GCDefaults
	}{
		{"nothing set, no cgroup", nil, files(nil), GCDefaults{GOGC: DefaultGOGC}},
		{"cgroup v2 limit", nil, container, GCDefaults{GOGC: DefaultGOGC, MemoryLimit: 900000000}},
		{"cgroup v2 without a limit", nil, service, GCDefaults{GOGC: DefaultGOGC}},
		{"cgroup v1 only", nil, v1, GCDefaults{GOGC: DefaultGOGC}},
		{"GOGC set", map[string]string{"GOGC": "100"}, container, GCDefaults{MemoryLimit: 900000000}},
		{"GOGC=off", map[string]string{"GOGC": "off"}, files(nil), GCDefaults{}},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "2GiB"}, container, GCDefaults{GOGC: DefaultGOGC}},
		{"both set", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, container, GCDefaults{}},
		{"unreadable memory.max", nil, func(name string) ([]byte, error) {
			if name == "/proc/self/cgroup" {
				return []byte("0::/a\n"), nil
			}
			return nil, errors.New("permission denied")
		}, GCDefaults{GOGC: DefaultGOGC}},
	} {
		if got := GCDefaultsFor(func(k string) string { return c.env[k] }, c.read); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
