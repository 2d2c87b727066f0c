package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/jsonc"
)

// node is a JSON value that keeps object keys in file order and scalars as
// their original bytes. A container read from a file also keeps the bytes
// around its members (whitespace, commas, each key with its colon), so a
// settings file wiggum edits is printed back from its own bytes: only
// where wiggum's entries go changes, and uninstall gives back the same
// bytes.
type node struct {
	kind  byte // '{', '[', or 0 for a scalar
	keys  []string
	vals  []*node
	items []*node
	raw   []byte // scalar bytes
	// pruned marks a list wiggum removed entries from, so it may drop
	// the list once it is empty (a list the user left empty stays).
	pruned bool
	// read: the container came from a file; the fields below describe it
	// as it was read. orig are its members (vals or items) in file order;
	// lead[i] is the text before orig[i] (the whitespace after the opening
	// bracket, or the comma and whitespace after the member before);
	// key[i] an object member's key and colon as written; tail the
	// whitespace before the closing bracket; line the indentation of the
	// line the container opens on.
	read bool
	orig []*node
	lead []string
	key  []string
	tail string
	line string
	// note[i] is the comment on orig[i]'s line after it and its comma
	// (" // why"), kept out of the lead and tail around it: it stays with
	// its member when wiggum adds one after it or takes one away.
	note []string
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

// members are a container's values in order: vals or items.
func (n *node) members() []*node {
	if n.kind == '{' {
		return n.vals
	}
	return n.items
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

// document is a JSON file as read: its top-level value, the whitespace
// around it, and the style new text written into it follows.
type document struct {
	root      *node
	pre, post string
	style     style
}

// parseJSON reads one JSON document; with comments, one with // and /* */
// comments, as Gemini CLI reads its settings, each kept where it was.
// Without, comments are not JSON and are refused rather than silently
// dropped.
func parseJSON(data []byte, comments bool) (*document, error) {
	plain := data
	if comments {
		plain = jsonc.Blank(data)
	}
	if !json.Valid(plain) {
		var v any
		err := json.Unmarshal(plain, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			err = fmt.Errorf("line %d: %w", line, err)
		}
		if comments {
			return nil, fmt.Errorf("not valid JSON (with comments): %w", err)
		}
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	// The structure is read from plain, the text kept from data.
	p := &parser{data: plain, src: data}
	p.ws()
	d := &document{pre: string(data[:p.pos])}
	d.root = p.value()
	if p.err != nil {
		return nil, p.err
	}
	d.post = string(data[p.pos:])
	d.style = style{indent: detectIndent(data), nl: "\n", colon: p.colon}
	if bytes.Contains(data, []byte("\r\n")) {
		d.style.nl = "\r\n"
	}
	if d.style.colon == "" {
		d.style.colon = ": "
	}
	return d, nil
}

// bytes prints the document back: its own bytes wherever nothing changed.
func (d *document) bytes() []byte {
	var b bytes.Buffer
	b.WriteString(d.pre)
	d.style.write(&b, d.root, "", false)
	b.WriteString(d.post)
	return b.Bytes()
}

type parser struct {
	data  []byte // src with its comments blanked
	src   []byte
	pos   int
	err   error
	colon string // the first object member's colon with its spaces
}

func (p *parser) ws() {
	for p.pos < len(p.data) && strings.IndexByte(" \t\r\n", p.data[p.pos]) >= 0 {
		p.pos++
	}
}

// since is the text from start to the current position.
func (p *parser) since(start int) string { return string(p.src[start:p.pos]) }

// noted splits text after a member (its comma and what follows, or the
// container's tail) into the comment on the member's line and the rest.
func noted(text string) (note, rest string) {
	comma := strings.IndexByte(string(jsonc.Blank([]byte(text))), ',') + 1
	end := comma
	for end < len(text) {
		switch r := text[end:]; {
		case r[0] == ' ' || r[0] == '\t':
			end++
			continue
		case strings.HasPrefix(r, "//"):
			end += len(r)
			if i := strings.IndexByte(r, '\n'); i >= 0 {
				end = len(text) - len(r) + i
			}
		case strings.HasPrefix(r, "/*"):
			end += strings.Index(r[2:], "*/") + 4
			continue
		}
		break
	}
	note = strings.TrimRight(text[comma:end], " \t\r")
	if !strings.Contains(note, "/") {
		return "", text
	}
	return note, text[:comma] + text[comma+len(note):]
}

// bare is separator text without its comments, for a member wiggum
// writes: a person's comment is theirs, not one per new member.
func bare(text string) string {
	if !strings.Contains(text, "/") {
		return text
	}
	first := strings.IndexByte(text, '\n')
	if first < 0 {
		return strings.Join(strings.Fields(string(jsonc.Blank([]byte(text)))), " ")
	}
	head := strings.TrimRight(string(jsonc.Blank([]byte(text[:first]))), " \t\r")
	nl := "\n"
	if strings.HasSuffix(text[:first], "\r") {
		nl = "\r\n"
	}
	return strings.TrimLeft(head, " \t") + nl + text[strings.LastIndexByte(text, '\n')+1:]
}

// value parses input json.Valid has already accepted.
func (p *parser) value() *node {
	p.ws()
	if p.pos >= len(p.data) {
		p.err = errors.New("unexpected end of JSON")
		return nil
	}
	switch c := p.data[p.pos]; c {
	case '{', '[':
		n := &node{kind: c, read: true, line: lineIndent(p.data, p.pos)}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.pos++
		start := p.pos
		p.ws()
		if p.data[p.pos] == closing {
			n.tail = p.since(start)
			p.pos++
			return n
		}
		for {
			p.ws()
			lead := p.since(start)
			if len(n.lead) > 0 {
				// The comment after the member before and its comma is
				// that member's.
				var note string
				note, lead = noted(lead)
				n.note = append(n.note, note)
			}
			n.lead = append(n.lead, lead)
			if c == '{' {
				keyStart := p.pos
				k := p.value()
				colonStart := p.pos
				p.ws()
				p.pos++ // ':'
				p.ws()
				if p.colon == "" {
					p.colon = p.since(colonStart)
				}
				n.key = append(n.key, p.since(keyStart))
				v := p.value()
				n.keys = append(n.keys, k.str())
				n.vals = append(n.vals, v)
			} else {
				n.items = append(n.items, p.value())
			}
			start = p.pos
			p.ws()
			sep := p.data[p.pos]
			if sep == closing {
				note, rest := noted(p.since(start))
				n.note = append(n.note, note)
				n.tail = rest
				p.pos++
				n.orig = append([]*node(nil), n.members()...)
				return n
			}
			p.pos++ // ','
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

// lineIndent is the leading whitespace of the line holding data[pos].
func lineIndent(data []byte, pos int) string {
	start := bytes.LastIndexByte(data[:pos], '\n') + 1
	end := start
	for end < pos && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}

// style is how new text is laid out: the file's indentation unit, line
// ending and colon spacing.
type style struct {
	indent, nl, colon string
}

// format prints n the way JSON.stringify(v, null, indent) and most editors
// do: one member per line, empty containers as {} and [].
func format(n *node, indent string) []byte {
	var b bytes.Buffer
	s := style{indent: indent, nl: "\n", colon: ": "}
	s.write(&b, n, "", false)
	b.WriteByte('\n')
	return b.Bytes()
}

// write prints n, whose first line starts indented by prefix. A container
// read from a file keeps the text around each member it still holds; a
// member wiggum added goes where it belongs, laid out as its neighbours
// are (one per line with their indentation, or on one line in a container
// written on one line - inline, for one wiggum made inside such a
// container). Where nothing changed, that is the file's own bytes.
func (s style) write(b *bytes.Buffer, n *node, prefix string, inline bool) {
	if n.kind == 0 {
		b.Write(n.raw)
		return
	}
	closing := "}"
	if n.kind == '[' {
		closing = "]"
	}
	b.WriteByte(n.kind)
	members := n.members()
	if len(members) == 0 {
		if n.read && len(n.orig) == 0 {
			b.WriteString(n.tail) // as the person wrote it: {} or { }
		}
		b.WriteString(closing)
		return
	}
	if n.read {
		prefix = n.line
	}
	// open, sep and end are the text after the opening bracket, between
	// two members and before the closing bracket, for members without
	// text of their own; a container that had members lends its own.
	// On one line, a comma is followed by what follows a colon.
	space := s.colon[strings.IndexByte(s.colon, ':')+1:]
	open, sep, end := s.nl+prefix+s.indent, ","+s.nl+prefix+s.indent, s.nl+prefix
	if inline {
		open, sep, end = "", ","+space, ""
	}
	if len(n.orig) > 0 {
		open, end = n.lead[0], n.tail
		inline = !strings.Contains(open, "\n")
		sep = "," + open
		if open == "" {
			sep = "," + space
		}
		if k := len(n.orig); k > 1 {
			sep = n.lead[k-1]
		}
	}
	// A member on a line of its own is indented as the separators say.
	inner := prefix + s.indent
	if !inline {
		by := sep
		if !strings.Contains(by, "\n") {
			by = open
		}
		by = bare(by)
		inner = lineIndent([]byte(by), len(by))
	}
	// A member's note follows its comma wherever the member goes; a
	// member wiggum writes takes no one's comments.
	note := ""
	for j, v := range members {
		i := indexOf(n.orig, v)
		var text string
		switch {
		case i > 0 && j > 0:
			text = n.lead[i]
		case i > 0:
			text = open
		case j == 0 && i < 0:
			text = bare(open)
		case j == 0:
			text = open
		case i == 0:
			text = "," + open
		default:
			text = bare(sep)
		}
		if c := strings.IndexByte(text, ','); note != "" && c >= 0 {
			text = text[:c+1] + note + text[c+1:]
		}
		b.WriteString(text)
		note = ""
		if i >= 0 {
			note = n.note[i]
		}
		if n.kind == '{' {
			if i >= 0 {
				b.WriteString(n.key[i])
			} else {
				b.Write(scalar(n.keys[j]).raw)
				b.WriteString(s.colon)
			}
		}
		s.write(b, v, inner, inline)
	}
	b.WriteString(note)
	b.WriteString(end)
	b.WriteString(closing)
}

// equal reports whether a and b hold the same keys and values in the
// same order, however they are laid out.
func equal(a, b *node) bool {
	if a.kind != b.kind || !bytes.Equal(a.raw, b.raw) || len(a.members()) != len(b.members()) || !slices.Equal(a.keys, b.keys) {
		return false
	}
	for i, v := range a.members() {
		if !equal(v, b.members()[i]) {
			return false
		}
	}
	return true
}

func indexOf(list []*node, v *node) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
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
