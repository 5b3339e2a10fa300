package failover

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

func get(key string, call, ret int64, value string, version store.Version) porcupine.Operation {
	in, out := storetest.KVGet(key, true, value, version)
	return porcupine.Operation{Input: in, Call: call, Return: ret, Output: out}
}

func put(key string, call, ret int64, value string, cond store.Condition, ok bool, version store.Version) porcupine.Operation {
	in, out := storetest.KVPut(key, value, cond, ok, false, version)
	return porcupine.Operation{Input: in, Call: call, Return: ret, Output: out}
}

func unknownPut(key string, call int64, value string, cond store.Condition) porcupine.Operation {
	in, out := storetest.KVPut(key, value, cond, false, true, "")
	return porcupine.Operation{Input: in, Call: call, Return: never, Output: out}
}

func TestCheckLinearizable(t *testing.T) {
	verdict := func(ops ...porcupine.Operation) porcupine.CheckResult {
		return CheckLinearizable(ops, 10*time.Second).Result
	}
	good := []porcupine.Operation{
		put("k", 0, 10, "a", store.IfAbsent, true, "5"),
		get("k", 5, 20, "a", "5"), // concurrent with the put, sees it
		put("k", 30, 40, "b", store.IfMatch("5"), true, "7"),
		put("k", 35, 45, "c", store.IfMatch("5"), false, ""), // lost the race
		get("x", 50, 60, "", ""),
	}
	_, good[4].Output = storetest.KVGet("x", false, "", "") // x not found
	if v := verdict(good...); v != porcupine.Ok {
		t.Fatalf("a clean history: %v", v)
	}
	t.Run("a put of unknown outcome seen later is linearizable", func(t *testing.T) {
		if v := verdict(append(good[:4:4], unknownPut("k", 50, "d", store.IfMatch("7")), get("k", 60, 70, "d", "9"))...); v != porcupine.Ok {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("a put of unknown outcome never seen is linearizable", func(t *testing.T) {
		if v := verdict(append(good[:4:4], unknownPut("k", 50, "d", store.IfMatch("7")), get("k", 60, 70, "b", "7"))...); v != porcupine.Ok {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("a stale read is caught", func(t *testing.T) {
		if v := verdict(append(good[:3:3], get("k", 50, 60, "a", "5"))...); v != porcupine.Illegal {
			t.Fatalf("got %v, want Illegal", v)
		}
	})
	t.Run("two conditional puts on one version both acknowledged are caught", func(t *testing.T) {
		bad := append(good[:3:3], put("k", 35, 45, "c", store.IfMatch("5"), true, "8"))
		if v := verdict(bad...); v != porcupine.Illegal {
			t.Fatalf("got %v, want Illegal", v)
		}
	})
	t.Run("an unknown put seen, then its predecessor again, is caught", func(t *testing.T) {
		bad := append(good[:3:3], unknownPut("k", 50, "d", store.IfMatch("7")), get("k", 60, 70, "d", "9"), get("k", 80, 90, "b", "7"))
		if v := verdict(bad...); v != porcupine.Illegal {
			t.Fatalf("got %v, want Illegal", v)
		}
	})
}
