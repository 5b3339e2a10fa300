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

// normValue turns an empty value into nil so that it marshals as null.
func normValue(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v
}
