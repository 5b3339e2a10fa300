package consulapi

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// appendEntries appends es as json.Marshal encodes it, byte for byte
// (TestAppendEntriesIsJSONMarshal holds it to that), without reflection:
// a KV read answers with it on every request.
func appendEntries(b []byte, es []*dirEntry) []byte {
	if es == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntry(b, e)
	}
	return append(b, ']')
}

// appendEntry is one dirEntry, its fields in declaration order.
func appendEntry(b []byte, e *dirEntry) []byte {
	if e == nil {
		return append(b, "null"...)
	}
	b = strconv.AppendUint(append(b, `{"LockIndex":`...), e.LockIndex, 10)
	b = appendString(append(b, `,"Key":`...), e.Key)
	b = strconv.AppendUint(append(b, `,"Flags":`...), e.Flags, 10)
	b = append(b, `,"Value":`...)
	if e.Value == nil {
		b = append(b, "null"...)
	} else {
		b = append(base64.StdEncoding.AppendEncode(append(b, '"'), e.Value), '"')
	}
	if e.Session != "" { // omitempty
		b = appendString(append(b, `,"Session":`...), e.Session)
	}
	b = strconv.AppendUint(append(b, `,"CreateIndex":`...), e.CreateIndex, 10)
	b = strconv.AppendUint(append(b, `,"ModifyIndex":`...), e.ModifyIndex, 10)
	return append(b, '}')
}

// appendString appends s as a JSON string the way encoding/json writes
// it. Printable ASCII other than " \ < > & is written as it is (what
// encoding/json does too); anything else — control characters, HTML's
// characters, which encoding/json escapes, non-ASCII and invalid UTF-8 —
// is left to encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
