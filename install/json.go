package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// node is a JSON value that keeps object keys in file order and scalars as
// their original bytes, so a settings file wiggum edits changes only where
// wiggum's entries go, and uninstall can give back the same bytes.
type node struct {
	kind  byte // '{', '[', or 0 for a scalar
	keys  []string
	vals  []*node
	items []*node
	raw   []byte // scalar bytes
	// pruned marks a list wiggum removed entries from, so it may drop
	// the list once it is empty (a list the user left empty stays).
	pruned bool
}

func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

func (n *node) set(key string, v *node) {
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return
		}
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
}

func (n *node) del(key string) {
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			n.vals = append(n.vals[:i], n.vals[i+1:]...)
			return
		}
	}
}

// str returns a scalar's string value, or "" when it is not a string.
func (n *node) str() string {
	if n == nil || n.kind != 0 {
		return ""
	}
	var s string
	if json.Unmarshal(n.raw, &s) != nil {
		return ""
	}
	return s
}

func object() *node { return &node{kind: '{'} }
func array() *node  { return &node{kind: '['} }

func scalar(v any) *node {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only strings, numbers and bools are passed
	}
	return &node{raw: bytes.TrimRight(b.Bytes(), "\n")}
}

// parseJSON reads one JSON document. Comments are not JSON and are refused
// rather than silently dropped.
func parseJSON(data []byte) (*node, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	p := &parser{data: data}
	n := p.value()
	return n, p.err
}

type parser struct {
	data []byte
	pos  int
	err  error
}

func (p *parser) ws() {
	for p.pos < len(p.data) && strings.IndexByte(" \t\r\n", p.data[p.pos]) >= 0 {
		p.pos++
	}
}

// value parses input json.Valid has already accepted.
func (p *parser) value() *node {
	p.ws()
	if p.pos >= len(p.data) {
		p.err = errors.New("unexpected end of JSON")
		return nil
	}
	switch p.data[p.pos] {
	case '{':
		n := object()
		p.pos++
		p.ws()
		if p.data[p.pos] == '}' {
			p.pos++
			return n
		}
		for {
			p.ws()
			k := p.value()
			p.ws()
			p.pos++ // ':'
			v := p.value()
			n.keys = append(n.keys, k.str())
			n.vals = append(n.vals, v)
			p.ws()
			c := p.data[p.pos]
			p.pos++
			if c == '}' {
				return n
			}
		}
	case '[':
		n := array()
		p.pos++
		p.ws()
		if p.data[p.pos] == ']' {
			p.pos++
			return n
		}
		for {
			n.items = append(n.items, p.value())
			p.ws()
			c := p.data[p.pos]
			p.pos++
			if c == ']' {
				return n
			}
		}
	case '"':
		start := p.pos
		p.pos++
		for p.data[p.pos] != '"' {
			if p.data[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		p.pos++
		return &node{raw: p.data[start:p.pos]}
	default:
		start := p.pos
		for p.pos < len(p.data) && strings.IndexByte(",]} \t\r\n", p.data[p.pos]) < 0 {
			p.pos++
		}
		return &node{raw: p.data[start:p.pos]}
	}
}

// format prints n the way JSON.stringify(v, null, indent) and most editors
// do: one member per line, empty containers as {} and [].
func format(n *node, indent string) []byte {
	var b bytes.Buffer
	write(&b, n, indent, "")
	b.WriteByte('\n')
	return b.Bytes()
}

func write(b *bytes.Buffer, n *node, indent, prefix string) {
	switch n.kind {
	case '{':
		if len(n.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range n.keys {
			b.WriteString(prefix + indent)
			b.Write(scalar(k).raw)
			b.WriteString(": ")
			write(b, n.vals[i], indent, prefix+indent)
			if i < len(n.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(prefix + "}")
	case '[':
		if len(n.items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, it := range n.items {
			b.WriteString(prefix + indent)
			write(b, it, indent, prefix+indent)
			if i < len(n.items)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(prefix + "]")
	default:
		b.Write(n.raw)
	}
}

// detectIndent returns the indentation unit of a formatted JSON file.
func detectIndent(data []byte) string {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}
