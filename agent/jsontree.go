package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// jnode is a decoded JSON value that keeps object keys in their order.
// Observations are shown to the model, summarised and shrunk; decoding
// into map[string]any would sort the keys and lose the backend's order
// ("id" and "status" first), which the model reads as importance.
type jnode struct {
	kind jkind
	text string   // number text, string value, "true"/"false"
	keys []string // object keys, parallel to vals
	vals []*jnode // object values or array items
}

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

var errTrailingData = errors.New("data after the JSON value")

// parseJSON decodes one JSON value, keeping key order and number text.
func parseJSON(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return n, nil
}

func decodeNode(dec *json.Decoder) (*jnode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &jnode{kind: jObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				v, err := decodeNode(dec)
				if err != nil {
					return nil, err
				}
				n.keys, n.vals = append(n.keys, key), append(n.vals, v)
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &jnode{kind: jArray}
			for dec.More() {
				v, err := decodeNode(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case nil:
		return &jnode{kind: jNull}, nil
	case bool:
		return &jnode{kind: jBool, text: strconv.FormatBool(t)}, nil
	case json.Number:
		return &jnode{kind: jNumber, text: t.String()}, nil
	case string:
		return &jnode{kind: jString, text: t}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// get returns the value of key in an object, or nil.
func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != jObject {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

func (n *jnode) isContainer() bool { return n.kind == jObject || n.kind == jArray }

// marshal encodes n compactly without escaping <, > and & (the model reads
// it, no browser does).
func (n *jnode) marshal() []byte { return n.appendTo(make([]byte, 0, 256)) }

func (n *jnode) appendTo(b []byte) []byte {
	switch n.kind {
	case jNull:
		return append(b, "null"...)
	case jBool, jNumber:
		return append(b, n.text...)
	case jString:
		return appendQuoted(b, n.text)
	case jArray:
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.appendTo(b)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, k)
			b = append(b, ':')
			b = n.vals[i].appendTo(b)
		}
		return append(b, '}')
	}
}

// appendQuoted writes s as a JSON string. Invalid UTF-8 becomes U+FFFD so
// the output is always valid JSON.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s { // ranging replaces invalid bytes with U+FFFD
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// toAny converts n for text/template: objects become map[string]any,
// numbers json.Number (printed as written, "5" not "5e+00").
func (n *jnode) toAny() any {
	switch n.kind {
	case jBool:
		return n.text == "true"
	case jNumber:
		return json.Number(n.text)
	case jString:
		return n.text
	case jArray:
		out := make([]any, len(n.vals))
		for i, v := range n.vals {
			out[i] = v.toAny()
		}
		return out
	case jObject:
		out := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			out[k] = n.vals[i].toAny()
		}
		return out
	}
	return nil
}

// canonicalJSON re-encodes a JSON value with sorted keys and no spaces, so
// that the same arguments written differently compare equal. Invalid JSON
// is returned as it is.
func canonicalJSON(raw []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}
