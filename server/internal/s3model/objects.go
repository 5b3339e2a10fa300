package s3model

import (
	"context"
	"errors"
	"time"
)

// Precheck runs before a write's body is read: the bucket must exist, and
// check (nil: none) may refuse a write whose precondition is already
// false. It returns the key's last-mutation index, the snapshot a
// conditional write compares at commit (the 409 rule). The decisive check
// is the one PutVersion runs at commit.
func (m *Model) Precheck(bucket, key string, check Check) (snapshot uint64, err error) {
	err = m.view(func(s *records) error {
		if _, err := s.mustBucket(bucket); err != nil {
			return err
		}
		if check == nil {
			snapshot = s.mod(bucket, key) // no need to read the version
			return nil
		}
		st, err := s.state(bucket, key)
		if err != nil {
			return err
		}
		snapshot = st.Mod
		return check(st)
	})
	return snapshot, err
}

// Put is the outcome of a published write.
type Put struct {
	// Version is the key's new current version.
	Version Version
	// Versioning is the bucket's versioning state.
	Versioning string
}

// PutVersion checks check (nil: none) against the key at commit and, if it
// holds, makes v the key's current version according to the bucket's
// versioning state, in one engine Update. data is v's inline body (nil
// unless v.Inline). The blobs of a version it replaced are removed after
// the commit.
func (m *Model) PutVersion(ctx context.Context, bucket, key string, check Check, v Version, data []byte) (Put, error) {
	var res Put
	err := m.updateDropping(ctx, func(s *records) (dropped []string, err error) {
		res = Put{}
		b, err := s.mustBucket(bucket)
		if err != nil {
			return nil, err
		}
		cur, ok, err := s.current(bucket, key)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(s.stateOf(bucket, key, cur, ok)); err != nil {
				return nil, err
			}
		}
		v.Modified = time.Now().UnixNano()
		res.Version, dropped = s.putVersionOver(bucket, key, b.Versioning, v, data, cur, ok)
		res.Versioning = b.Versioning
		return dropped, nil
	})
	return res, err
}

// Found is a version found by Lookup.
type Found struct {
	Version Version
	// Data is the inline body (nil when the body is in blobs).
	Data []byte
	// Versioning is the bucket's versioning state.
	Versioning string
}

// Lookup finds the version a GET, HEAD or copy addresses: the current one,
// or versionID when byID. A missing key, a missing version and a delete
// marker are refused with *Error (ErrNoSuchKey, ErrNoSuchVersion,
// ErrDeleteMarker).
func (m *Model) Lookup(bucket, key, versionID string, byID bool) (Found, error) {
	var f Found
	err := m.view(func(s *records) error {
		var err error
		if f, err = s.lookup(bucket, key, versionID, byID); err != nil {
			return err
		}
		if f.Version.Inline {
			f.Data = s.inline(bucket, key, f.Version)
		}
		return nil
	})
	return f, err
}

// SetTags replaces the tag set of one version in place (tags nil: delete
// them), as Lookup addresses it. It returns the version and the bucket's
// versioning state.
func (m *Model) SetTags(ctx context.Context, bucket, key, versionID string, byID bool, tags map[string]string) (Found, error) {
	var f Found
	err := m.update(ctx, func(s *records) error {
		var err error
		if f, err = s.lookup(bucket, key, versionID, byID); err != nil {
			return err
		}
		f.Version.Tags = tags
		return s.rewriteVersion(bucket, key, f.Version)
	})
	return f, err
}

// lookup finds the version Lookup addresses, with the bucket's versioning
// state (Data is left to the caller).
func (s *records) lookup(bucket, key, versionID string, byID bool) (Found, error) {
	b, err := s.mustBucket(bucket)
	if err != nil {
		return Found{}, err
	}
	v, err := s.find(bucket, key, versionID, byID)
	return Found{Version: v, Versioning: b.Versioning}, err
}

// Deletion is one key to delete: its current version (writing a delete
// marker on a versioned bucket), or with ByID one version permanently.
type Deletion struct {
	Key       string
	VersionID string
	ByID      bool
	// Check (nil: none) decides a conditional delete of the current
	// version against the key's state; it is not run with ByID.
	Check Check
}

// Deleted is the outcome of one Deletion.
type Deleted struct {
	// Marker: a delete marker was created or removed.
	Marker bool
	// VersionID is the version removed or the marker created.
	VersionID string
}

// Delete deletes one key, in one engine Update.
func (m *Model) Delete(ctx context.Context, bucket string, d Deletion) (Deleted, error) {
	outs, errs, err := m.DeleteMany(ctx, bucket, []Deletion{d})
	if err != nil {
		return Deleted{}, err
	}
	return outs[0], errs[0]
}

// DeleteMany deletes every key of ds in one engine Update. A deletion that
// its Check refuses leaves its key as it was and reports the refusal in
// errs[i]; err is a failure of the whole request (such as
// ErrNoSuchBucket), after which nothing was deleted.
func (m *Model) DeleteMany(ctx context.Context, bucket string, ds []Deletion) (outs []Deleted, errs []error, err error) {
	err = m.updateDropping(ctx, func(s *records) (dropped []string, err error) {
		outs, errs = make([]Deleted, len(ds)), make([]error, len(ds))
		b, err := s.mustBucket(bucket)
		if err != nil {
			return nil, err
		}
		for i, d := range ds {
			out, bl, err := s.deleteOne(bucket, b.Versioning, d)
			var refused refusal
			switch {
			case errors.As(err, &refused):
				errs[i] = refused.err // checked before any write of this key
			case err != nil:
				return nil, err
			default:
				outs[i] = out
				dropped = append(dropped, bl...)
			}
		}
		return dropped, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return outs, errs, nil
}

// refusal marks a Check's refusal inside deleteOne, which DeleteMany
// reports per key instead of failing the Update.
type refusal struct{ err error }

// Error is the refusal's own message.
func (r refusal) Error() string { return r.err.Error() }

// deleteOne deletes one key inside an Update and returns the blobs it
// released. It writes only after every check passed.
func (s *records) deleteOne(bucket, versioning string, d Deletion) (Deleted, []string, error) {
	var out Deleted
	if d.ByID {
		v, ok, err := s.versionByID(bucket, d.Key, d.VersionID)
		if err != nil || !ok {
			out.VersionID = d.VersionID
			return out, nil, err // deleting a missing version is a no-op
		}
		dropped := s.removeVersion(bucket, d.Key, v)
		out.Marker, out.VersionID = v.Marker, v.VersionID
		s.tidyMod(bucket, d.Key)
		return out, dropped, nil
	}
	st, err := s.state(bucket, d.Key)
	if err != nil {
		return out, nil, err
	}
	if d.Check != nil {
		if err := d.Check(st); err != nil {
			return out, nil, refusal{err}
		}
	}
	if versioning == VersioningOff {
		var dropped []string
		if v, ok, _ := s.current(bucket, d.Key); ok {
			dropped = s.removeVersion(bucket, d.Key, v)
			s.tidyMod(bucket, d.Key)
		}
		return out, dropped, nil
	}
	mk := Version{Marker: true, Modified: time.Now().UnixNano()}
	mk, dropped := s.putVersion(bucket, d.Key, versioning, mk, nil)
	out.Marker, out.VersionID = true, mk.VersionID
	return out, dropped, nil
}
