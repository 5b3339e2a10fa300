package s3model

import (
	"encoding/json"
	"testing"
)

// TestParseBucketAgreesWithJSON: the fast decoder of Bucket records
// answers exactly what encoding/json does for every form mustJSON writes,
// and declines (ok false) every other form, never answering differently.
func TestParseBucketAgreesWithJSON(t *testing.T) {
	for _, rec := range []Bucket{
		{}, {Created: 1}, {Created: -5}, {Created: 1764600000123456789},
		{Created: 7, Versioning: VersioningEnabled}, {Created: 7, Versioning: VersioningSuspended},
	} {
		got, ok := parseBucket(mustJSON(rec))
		if !ok || got != rec {
			t.Errorf("parseBucket(%s) = %+v, %v; want %+v", mustJSON(rec), got, ok, rec)
		}
	}
	for _, raw := range []string{
		`{"c":1,"v":"Other"}`, `{"c":01}`, `{"c":1 }`, `{"c":1,"x":2}`, `{"v":"Enabled","c":1}`,
		`{"c":1`, `{"c":}`, `{"c":1,}`, `{"c":"1"}`, `{"c":1}x`,
	} {
		got, ok := parseBucket([]byte(raw))
		if !ok {
			continue
		}
		var want Bucket
		if err := json.Unmarshal([]byte(raw), &want); err != nil || got != want {
			t.Errorf("parseBucket(%s) = %+v, accepted; encoding/json: %+v, %v", raw, got, want, err)
		}
	}
}
