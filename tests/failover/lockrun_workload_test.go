package failover

import "testing"

func TestCheckLockRunLog(t *testing.T) {
	l := func(what string, tok uint64) LockRunLine { return LockRunLine{what, tok} }
	good := []LockRunLine{l("start", 1), l("beat", 1), l("end", 1), l("start", 3), l("beat", 3), l("start", 4), l("end", 4)} // 3 was killed
	if vs := CheckLockRunLog(good); len(vs) != 0 {
		t.Fatalf("a clean log: %v", vs)
	}
	t.Run("a beat of an older holder after a newer start is caught", func(t *testing.T) {
		bad := []LockRunLine{l("start", 1), l("start", 2), l("beat", 1), l("end", 2)}
		if k := kinds(CheckLockRunLog(bad)); k["overlap"] != 1 || len(k) != 1 {
			t.Fatalf("got %v, want one overlap", k)
		}
	})
	t.Run("a token that does not increase is caught", func(t *testing.T) {
		bad := []LockRunLine{l("start", 2), l("end", 2), l("start", 2), l("end", 2)}
		if k := kinds(CheckLockRunLog(bad)); k["inversion"] != 1 || len(k) != 1 {
			t.Fatalf("got %v, want one inversion", k)
		}
	})
}
