package s3model

import (
	"bytes"
	"strings"

	"github.com/latchkey/latchkey/internal/keyrange"
)

// VersionsQuery selects one page of ListObjectVersions.
type VersionsQuery struct {
	Prefix, Delimiter string
	// KeyMarker and VersionIDMarker: resume after that version of that key
	// (after every version of KeyMarker when VersionIDMarker is "").
	KeyMarker, VersionIDMarker string
	Max                        int
}

// VersionEntry is one version or delete marker of a VersionsPage.
type VersionEntry struct {
	Key     string
	Version Version
	// Latest: the key's current version.
	Latest bool
}

// VersionsPage is one page of versions and delete markers, newest first
// within a key, and the common prefixes among them.
type VersionsPage struct {
	Entries   []VersionEntry
	Prefixes  []string
	Truncated bool
	// NextKey and NextVersionID resume a truncated listing ("" otherwise);
	// NextKey is a common prefix when the page ended with one.
	NextKey, NextVersionID string
}

// ListVersions lists every version and delete marker of bucket, resuming
// after (KeyMarker, VersionIDMarker).
func (m *Model) ListVersions(bucket string, q VersionsQuery) (VersionsPage, error) {
	var page VersionsPage
	err := m.view(func(s *records) error {
		page = VersionsPage{}
		if _, err := s.mustBucket(bucket); err != nil {
			return err
		}
		b := s.read(tblVersions)
		if b == nil || q.Max == 0 {
			return nil
		}
		l := versionLister{q: q, bucket: bucket, bp: bucketPrefix(bucket), c: b.Cursor(), page: &page}
		return l.run()
	})
	return page, err
}

// versionLister walks the version table for one ListVersions page.
type versionLister struct {
	q      VersionsQuery
	bucket string
	bp     []byte // bucket + "/"
	c      cursor
	page   *VersionsPage
	k, v   []byte // the cursor's entry
	count  int
	// lastKey is the key of the last entry listed, latestOf the key whose
	// newest version was seen (the next one of that key is not Latest).
	lastKey, latestOf string
}

func (l *versionLister) run() error {
	if err := l.start(); err != nil {
		return err
	}
	for l.k != nil && bytes.HasPrefix(l.k, l.bp) && !l.page.Truncated {
		key, _, ok := splitVersionKey(l.k, len(l.bp))
		if !ok || !strings.HasPrefix(key, l.q.Prefix) {
			break
		}
		var (
			more bool
			err  error
		)
		if cp := rollup(key, l.q.Prefix, l.q.Delimiter); cp != "" {
			more = l.commonPrefix(cp)
		} else {
			more, err = l.version(key)
		}
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if !l.page.Truncated {
		l.page.NextKey, l.page.NextVersionID = "", ""
	}
	return nil
}

// start positions the cursor at the first entry after the markers.
func (l *versionLister) start() error {
	q := l.q
	switch {
	case q.KeyMarker == "":
		l.k, l.v = l.c.Seek(seekKey(l.bp, q.Prefix))
	case q.VersionIDMarker == "":
		l.k, l.v = l.c.Seek(seekKey(l.bp, startAfter(q.Prefix, q.Delimiter, q.KeyMarker)))
	default:
		// Resume after the given version of KeyMarker: find it, then step
		// past it.
		l.k, l.v = l.c.Seek(seekKey(l.bp, q.KeyMarker))
		kp := keyPrefix(l.bucket, q.KeyMarker)
		for l.k != nil && bytes.HasPrefix(l.k, kp) {
			rec, err := decode[Version](l.v)
			if err != nil {
				return err
			}
			l.k, l.v = l.c.Next()
			if rec.VersionID == q.VersionIDMarker {
				break
			}
		}
	}
	return nil
}

// full reports (and records) that the page holds Max entries.
func (l *versionLister) full() bool {
	if l.count == l.q.Max {
		l.page.Truncated = true
		return true
	}
	return false
}

// commonPrefix lists cp once and skips past its keys; false ends the walk.
func (l *versionLister) commonPrefix(cp string) bool {
	if l.full() {
		return false
	}
	l.page.Prefixes = append(l.page.Prefixes, cp)
	l.count++
	l.page.NextKey, l.page.NextVersionID = cp, ""
	end := keyrange.PrefixEnd(cp)
	if end == "" {
		return false
	}
	l.k, l.v = l.c.Seek(seekKey(l.bp, end))
	return true
}

// version lists the cursor's version of key and steps to the next entry.
func (l *versionLister) version(key string) (bool, error) {
	rec, err := decode[Version](l.v)
	if err != nil {
		return false, err
	}
	if l.full() {
		return false, nil
	}
	latest := key != l.latestOf
	l.latestOf = key
	if l.q.KeyMarker != "" && l.q.VersionIDMarker != "" && key == l.q.KeyMarker && l.lastKey == "" {
		latest = false // resumed inside this key's versions
	}
	l.lastKey = key
	l.page.Entries = append(l.page.Entries, VersionEntry{Key: key, Version: rec, Latest: latest})
	l.count++
	l.page.NextKey, l.page.NextVersionID = key, rec.VersionID
	l.k, l.v = l.c.Next()
	return true, nil
}
