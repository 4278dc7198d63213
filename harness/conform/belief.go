package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// object is a JSON object as a node wrote it, its numbers kept as written,
// so that a field of the wrong type is seen and named instead of decoded
// into a zero.
type object map[string]any

// readObject reads body as one JSON object.
func readObject(body []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON (%v): %s", err, quote(body))
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object but %s", describe(v))
	}
	return o, nil
}

// describe names a JSON value and its type for a message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "the string " + strconv.Quote(v)
	case bool:
		return "the boolean " + strconv.FormatBool(v)
	case json.Number:
		return "the number " + v.String()
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// A field's presence. An optional field may be left out or null: a Go
// reader decodes either as the zero value.
const (
	required = true
	optional = false
)

// integer reads field name as a JSON integer that fits an int64: written
// without a fraction or an exponent, as a Go reader decodes into int64.
func (o object) integer(name string, need bool) (n int64, present bool, err error) {
	v, ok := o[name]
	if !ok || v == nil {
		return 0, false, o.missing(name, need, "an integer")
	}
	num, ok := v.(json.Number)
	if ok {
		if n, err := strconv.ParseInt(num.String(), 10, 64); err == nil {
			return n, true, nil
		}
	}
	return 0, false, fmt.Errorf("%q is %s, not an integer", name, describe(v))
}

func (o object) boolean(name string, need bool) (b, present bool, err error) {
	v, ok := o[name]
	if !ok || v == nil {
		return false, false, o.missing(name, need, "a boolean")
	}
	if b, ok := v.(bool); ok {
		return b, true, nil
	}
	return false, false, fmt.Errorf("%q is %s, not a boolean", name, describe(v))
}

func (o object) text(name string, need bool) (s string, present bool, err error) {
	v, ok := o[name]
	if !ok || v == nil {
		return "", false, o.missing(name, need, "a string")
	}
	if s, ok := v.(string); ok {
		return s, true, nil
	}
	return "", false, fmt.Errorf("%q is %s, not a string", name, describe(v))
}

func (o object) missing(name string, need bool, want string) error {
	if !need {
		return nil
	}
	if v, ok := o[name]; ok && v == nil {
		return fmt.Errorf("%q is null, not %s", name, want)
	}
	return fmt.Errorf("%q is missing", name)
}

// Belief is a node's answer to GET /leader, or a line of its watch, as
// far as it could be read.
type Belief struct {
	Node   string
	Leader bool // false too when "leader" is not a boolean
	// Token is the node's fencing token, when it gave one that reads as
	// an integer.
	Token    int64
	HasToken bool
	LeaderID string
}

// claims says whether b is a claim the checkers count: a leader's, with
// a token above 0 (checkers.ElectionSafety).
func (b Belief) claims() bool { return b.Leader && b.HasToken && b.Token > 0 }

// readBelief reads o as node's belief, field by field, as the contract
// types them: "node" the node's own name, "leader" a boolean, "token" an
// integer (above 0 while the node leads: the checkers take no other as a
// claim), "leader_id" a string if given. It returns what it could read
// and the first field that breaks the contract.
func readBelief(node string, o object) (Belief, error) {
	var (
		b     Belief
		first error
	)
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	name, _, err := o.text("node", required)
	note(err)
	if err == nil && name != node {
		note(fmt.Errorf("\"node\" is %q, not the node's own name %q (SPLITBRAIN_NODE)", name, node))
	}
	b.Node = name
	b.Leader, _, err = o.boolean("leader", required)
	note(err)
	b.Token, b.HasToken, err = o.integer("token", b.Leader) // required of a leader
	note(err)
	if b.Leader && b.HasToken && b.Token <= 0 {
		note(fmt.Errorf("\"token\" is %d: a leader's token must be above 0", b.Token))
	}
	b.LeaderID, _, err = o.text("leader_id", optional)
	note(err)
	return b, first
}

// quote shows a body in a message: as a string, cut short when long.
func quote(body []byte) string {
	const most = 160
	body = bytes.TrimSpace(body)
	if len(body) > most {
		return string(body[:most]) + "..."
	}
	return string(body)
}
