package s3api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// postPolicy is a PostObject policy document (base64 JSON
// {"expiration": …, "conditions": […]}), parsed.
type postPolicy struct {
	expiration time.Time
	conds      []postCond
}

// postCond is one condition: op is "eq", "starts-with" or
// "content-length-range"; field is the lower-case form field name without
// "$" (name keeps the spelling of the policy, for messages).
type postCond struct {
	op, field, name, value string
	min, max               int64
}

func errInvalidPolicy(format string, args ...any) *Error {
	return newErr(http.StatusBadRequest, "InvalidPolicyDocument", "Invalid Policy: "+fmt.Sprintf(format, args...))
}

func errPolicyDenied(why string) *Error {
	return newErr(http.StatusForbidden, "AccessDenied", "Invalid according to Policy: "+why)
}

// parsePostPolicy decodes the policy field. Both keys are required and
// case-sensitive, as on AWS; anything malformed is 400
// InvalidPolicyDocument.
func parsePostPolicy(b64 string) (*postPolicy, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errInvalidPolicy("the policy is not base64.")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, errInvalidPolicy("Invalid JSON.")
	}
	expRaw, ok := doc["expiration"]
	if !ok {
		return nil, errInvalidPolicy("Policy missing expiration.")
	}
	condRaw, ok := doc["conditions"]
	if !ok {
		return nil, errInvalidPolicy("Policy missing conditions.")
	}
	var exp string
	if json.Unmarshal(expRaw, &exp) != nil {
		return nil, errInvalidPolicy("Invalid 'expiration' value: %s", expRaw)
	}
	p := &postPolicy{}
	if p.expiration, err = time.Parse(time.RFC3339, exp); err != nil || !strings.HasSuffix(exp, "Z") {
		return nil, errInvalidPolicy("Invalid 'expiration' value: '%s'", exp)
	}
	var conds []json.RawMessage
	if json.Unmarshal(condRaw, &conds) != nil {
		return nil, errInvalidPolicy("Invalid 'conditions' value: must be a list.")
	}
	for _, c := range conds {
		pc, err := parsePostCond(c)
		if err != nil {
			return nil, err
		}
		p.conds = append(p.conds, pc)
	}
	return p, nil
}

func parsePostCond(c json.RawMessage) (postCond, error) {
	c = bytes.TrimSpace(c)
	if len(c) > 0 && c[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(c, &m) != nil || len(m) != 1 {
			return postCond{}, errInvalidPolicy("Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")
		}
		for k, v := range m {
			val, ok := jsonScalar(v)
			if !ok {
				return postCond{}, errInvalidPolicy("Invalid Simple-Condition: value of %q must be a string.", k)
			}
			return newEqCond("eq", "$"+k, val)
		}
	}
	var arr []json.RawMessage
	if json.Unmarshal(c, &arr) != nil || len(arr) != 3 {
		return postCond{}, errInvalidPolicy("Invalid Condition: %s", c)
	}
	var op string
	if json.Unmarshal(arr[0], &op) != nil {
		return postCond{}, errInvalidPolicy("Invalid Condition: %s", c)
	}
	switch op = strings.ToLower(op); op {
	case "eq", "starts-with":
		name, ok1 := jsonScalar(arr[1])
		val, ok2 := jsonScalar(arr[2])
		if !ok1 || !ok2 {
			return postCond{}, errInvalidPolicy("Invalid Condition: %s", c)
		}
		return newEqCond(op, name, val)
	case "content-length-range":
		lo, ok1 := jsonInt(arr[1])
		hi, ok2 := jsonInt(arr[2])
		if !ok1 || !ok2 || lo < 0 || hi < lo {
			return postCond{}, errPolicyDenied(fmt.Sprintf("Policy Condition failed: %s", c))
		}
		return postCond{op: op, min: lo, max: hi}, nil
	}
	return postCond{}, errInvalidPolicy("Invalid Condition: unknown operation %q", op)
}

// eqOnly are the fields AWS lets a policy match exactly only.
func eqOnly(field string) bool {
	switch field {
	case "bucket", "success_action_status":
		return true
	}
	return strings.HasPrefix(field, "x-amz-") && !strings.HasPrefix(field, "x-amz-meta-")
}

func newEqCond(op, name, val string) (postCond, error) {
	field, ok := strings.CutPrefix(name, "$")
	field = strings.ToLower(field)
	c := postCond{op: op, field: field, name: name, value: val}
	if !ok {
		// AWS: a field without "$" never matches.
		c.field = ""
	}
	if op == "starts-with" && eqOnly(field) {
		return postCond{}, errInvalidPolicy("Invalid Condition: 'starts-with' is not allowed for %q", name)
	}
	return c, nil
}

// jsonScalar reads a JSON string (or number) as text.
func jsonScalar(v json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String(), true
	}
	return "", false
}

// jsonInt reads a JSON integer or a string holding one.
func jsonInt(v json.RawMessage) (int64, bool) {
	s, ok := jsonScalar(v)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

func (c postCond) String() string {
	if c.op == "content-length-range" {
		return fmt.Sprintf(`["content-length-range", %d, %d]`, c.min, c.max)
	}
	b, _ := json.Marshal([]string{c.op, c.name, c.value})
	return strings.ReplaceAll(string(b), `","`, `", "`)
}

// check evaluates every condition against the form (lower-case names; key
// already ${filename}-expanded, bucket the request's) and then requires
// every field but the exempt ones to be named by a condition. The size
// range is returned for the file reader to enforce; a bucket condition is
// required.
func (p *postPolicy) check(fields map[string]string, bucket string, now time.Time) (minSize, maxSize int64, err error) {
	if !now.Before(p.expiration) {
		return 0, 0, errPolicyDenied("Policy expired.")
	}
	covered := map[string]bool{}
	minSize, maxSize = 0, MaxObjectSize
	for _, c := range p.conds {
		if c.op == "content-length-range" {
			minSize, maxSize = max(minSize, c.min), min(maxSize, c.max)
			continue
		}
		covered[c.field] = true
		got := fields[c.field]
		if c.field == "bucket" {
			got = bucket
		}
		if c.field == "" || !condHolds(c, got) {
			return 0, 0, errPolicyDenied("Policy Condition failed: " + c.String())
		}
	}
	if !covered["bucket"] {
		return 0, 0, errPolicyDenied(`Policy Condition failed: ["eq", "$bucket", ` + strconv.Quote(bucket) + `]`)
	}
	for name := range fields {
		if !covered[name] && !postExempt(name) {
			return 0, 0, errPolicyDenied("Extra input fields: " + name)
		}
	}
	return minSize, maxSize, nil
}

func condHolds(c postCond, got string) bool {
	if c.op == "eq" {
		return got == c.value
	}
	if c.field == "content-type" && strings.Contains(got, ",") {
		// A list of types must match item by item.
		for _, item := range strings.Split(got, ",") {
			if !strings.HasPrefix(strings.TrimSpace(item), c.value) {
				return false
			}
		}
		return true
	}
	return strings.HasPrefix(got, c.value)
}

// postExempt: the fields a policy need not name (AWS's list).
func postExempt(name string) bool {
	switch name {
	case "x-amz-signature", "file", "policy":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-")
}
