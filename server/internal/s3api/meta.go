package s3api

import (
	"github.com/latchkey/latchkey/server/internal/s3model"
)

// The records are the object model's (server/internal/s3model, which alone knows
// the layout on disk); these names keep the handlers short.
type (
	version        = s3model.Version
	segment        = s3model.Segment
	uploadRec      = s3model.Upload
	partRec        = s3model.Part
	objectChecksum = s3model.Checksum
	// current is a key as the write preconditions (cond.go) see it.
	current = s3model.State
)

// nullVersion is the version ID of objects written while versioning is not
// enabled.
const nullVersion = s3model.NullVersion

// Versioning states of a bucket.
const (
	versioningOff       = s3model.VersioningOff
	versioningEnabled   = s3model.VersioningEnabled
	versioningSuspended = s3model.VersioningSuspended
)

func versionID(index uint64) string { return s3model.VersionID(index) }

func parseVersionID(id string) (uint64, bool) { return s3model.ParseVersionID(id) }

// validKeyChars rejects keys the storage layout cannot hold.
func validKeyChars(key string) bool { return s3model.ValidKey(key) }
