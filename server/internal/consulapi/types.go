package consulapi

// dirEntry is one KV entry in Consul's wire format. The field order is the
// order Consul marshals: LockIndex, Key, Flags, Value, Session,
// CreateIndex, ModifyIndex. Session is omitted when the key is unlocked;
// Value is null when empty (keep it nil, never an empty slice).
type dirEntry struct {
	LockIndex   uint64
	Key         string
	Flags       uint64
	Value       []byte
	Session     string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// clone returns a copy of e that shares nothing mutable with it.
func (e *dirEntry) clone() *dirEntry {
	c := *e
	if len(e.Value) > 0 {
		c.Value = append([]byte(nil), e.Value...)
	} else {
		c.Value = nil
	}
	return &c
}

// withoutValue makes e what write results of /v1/txn show, Value null,
// and returns it. It changes e: call it on an entry of one's own (a fresh
// toDir), as every caller does.
func (e *dirEntry) withoutValue() *dirEntry {
	e.Value = nil
	return e
}

// normValue turns an empty value into nil so that it marshals as null.
func normValue(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v
}
