package failover

import "testing"

func TestCheckSnapshots(t *testing.T) {
	whole := func(gen string) SnapshotRead {
		return SnapshotRead{Generation: gen, Objects: map[string]string{"a": gen + " a", "b": gen + " b", "c": gen + " c"}}
	}
	commits := map[string]Outcome{"g1": Acked, "g2": Unknown, "g3": Refused}
	if vs := CheckSnapshots([]SnapshotRead{whole("g1"), whole("g2"), whole("g1")}, commits, pubNames); len(vs) != 0 {
		t.Fatalf("whole snapshots of committed generations: %v", vs)
	}
	mixed := whole("g2")
	mixed.Objects["b"] = "g1 b"
	short := whole("g1")
	delete(short.Objects, "c")
	corrupt := whole("g1")
	corrupt.Err = "c: object does not match manifest"
	for name, tc := range map[string]struct {
		r    SnapshotRead
		kind string
	}{
		"an object of another generation": {mixed, "torn-snapshot"},
		"a missing object":                {short, "torn-snapshot"},
		"a corrupt object":                {corrupt, "torn-snapshot"},
		"a refused generation":            {whole("g3"), "refused-visible"},
		"a generation never committed":    {whole("g9"), "refused-visible"},
	} {
		t.Run(name+" is caught", func(t *testing.T) {
			if k := kinds(CheckSnapshots([]SnapshotRead{whole("g1"), tc.r}, commits, pubNames)); k[tc.kind] != 1 || len(k) != 1 {
				t.Fatalf("got %v, want one %s", k, tc.kind)
			}
		})
	}
}
