package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// PRDJSON is a snarktank/ralph prd.json: userStories with id, title,
// description, acceptanceCriteria, priority and passes. Lowest priority
// number runs first; passes: true means done.
//
// A loop asks for the stories several times an iteration, and decoding a
// plan of 10,000 stories costs a hundred milliseconds: the stories are
// kept while the file's size, modification time and inode stay the same,
// as Markdown's parse is, and a tick keeps them up to date with its own
// write instead of decoding the whole document again.
type PRDJSON struct {
	File string

	mu     sync.Mutex
	cached *prdParse
}

// prdParse is one read of the file, as it was when id was taken: its
// stories as Stories says them, and where each story's passes value is
// (spans, found on the first tick).
type prdParse struct {
	id      fileID
	body    []byte
	bom     bool
	stories []Story
	byID    map[string]int
	spans   map[string]passesAt
}

// passesAt is where a story's passes value is in the body: start is -1
// for a story without a passes field.
type passesAt struct{ start, end int }

// parse returns the file's stories, from the cache when the file has not
// changed. The caller holds p.mu and never changes what it holds.
func (p *PRDJSON) parse() (*prdParse, error) {
	id, ok := statID(p.File)
	if ok && p.cached != nil && p.cached.id == id {
		return p.cached, nil
	}
	f, err := p.read()
	if err != nil {
		return nil, err
	}
	stories, err := p.stories(f.raws)
	if err != nil {
		return nil, err
	}
	c := &prdParse{id: id, body: f.body, bom: f.bom, stories: stories, byID: make(map[string]int, len(stories))}
	for i, s := range stories {
		c.byID[s.ID] = i
	}
	p.cached = nil
	if ok {
		p.cached = c
	}
	return c, nil
}

// Kind implements Plan.
func (p *PRDJSON) Kind() string { return "prd.json" }

// Path implements Plan.
func (p *PRDJSON) Path() string { return p.File }

type prdStory struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description"`
	AcceptanceCriteria []string `json:"acceptanceCriteria"`
	Priority           *int     `json:"priority"`
	Passes             bool     `json:"passes"`
}

// prdFile is a prd.json as read: its bytes after any byte order mark
// (body), whether it had one (kept when the plan is written), the
// document with its key order kept, and its stories as written.
type prdFile struct {
	body []byte
	bom  bool
	doc  *object
	raws []json.RawMessage
}

// read reads and parses the plan's file.
func (p *PRDJSON) read() (*prdFile, error) {
	data, err := statefile.ReadFile(p.File)
	if err != nil {
		return nil, fmt.Errorf("plan: read %s: %w", p.File, err)
	}
	return parsePRD(p.File, data)
}

// parsePRD parses a prd.json document, name saying in errors what it is.
func parsePRD(name string, data []byte) (*prdFile, error) {
	// A byte order mark (Windows editors write one) is no JSON.
	body, bom := bytes.CutPrefix(data, []byte(utf8BOM))
	var doc object
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, badInput("plan: %s is not a prd.json object: %v", name, err)
	}
	raw, ok := doc.get("userStories")
	if !ok {
		return nil, badInput("plan: %s has no userStories array", name)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, badInput("plan: %s: userStories is not an array: %v", name, err)
	}
	return &prdFile{body: body, bom: bom, doc: &doc, raws: raws}, nil
}

// Stories implements Plan.
func (p *PRDJSON) Stories() ([]Story, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.parse()
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.stories), nil
}

// stories reads raws, the file's userStories, as Stories says them: an
// error for a story without a usable id, or an id twice.
func (p *PRDJSON) stories(raws []json.RawMessage) ([]Story, error) {
	out := make([]Story, 0, len(raws))
	seen := map[string]bool{}
	for i, r := range raws {
		var s prdStory
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, badInput("plan: %s: userStories[%d]: %v", p.File, i, err)
		}
		if strings.TrimSpace(s.ID) == "" {
			return nil, badInput("plan: %s: userStories[%d] has no id", p.File, i)
		}
		if !validID(s.ID) {
			return nil, badInput("plan: %s: userStories[%d] has id %q; an id is at most 100 printable characters", p.File, i, s.ID)
		}
		if seen[s.ID] {
			return nil, badInput("plan: %s: story id %s appears twice", p.File, s.ID)
		}
		seen[s.ID] = true
		prio := 1 << 30
		if s.Priority != nil {
			prio = *s.Priority
		}
		out = append(out, Story{ID: s.ID, Title: s.Title, Details: s.details(), Priority: prio, Done: s.Passes})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out, nil
}

// validID keeps ids fit for commit messages and environment variables.
func validID(id string) bool {
	if len(id) > 100 {
		return false
	}
	for _, r := range id {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

func (s prdStory) details() string {
	var b strings.Builder
	b.WriteString(s.Description)
	if len(s.AcceptanceCriteria) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Acceptance criteria:\n")
		for _, c := range s.AcceptanceCriteria {
			b.WriteString("- " + c + "\n")
		}
	}
	return strings.TrimSpace(b.String())
}

// MarkDone sets passes: true on the story with exactly id, keeping every
// other field and the key order. Where the story has a passes field, only
// its value's bytes change: the file keeps its indentation, its layout and
// its text as written (a title's "R&D <b>" stays so). A story with no
// passes field gets one, and the file is written again (write).
func (p *PRDJSON) MarkDone(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A plan that does not read cleanly is never rewritten.
	c, err := p.parse()
	if err != nil {
		return err
	}
	if c.spans == nil {
		c.spans, _ = passesSpans(c.body)
	}
	if at, found := c.spans[id]; c.spans != nil {
		if !found {
			return &NotFoundError{ID: id, Path: p.File}
		}
		if at.start >= 0 {
			body := c.body
			if string(body[at.start:at.end]) == "true" {
				return nil
			}
			out := make([]byte, 0, len(utf8BOM)+len(body)+4)
			if c.bom {
				out = append(out, utf8BOM...)
			}
			out = append(append(append(out, body[:at.start]...), "true"...), body[at.end:]...)
			p.cached = nil
			if err := writeAtomic(p.File, out); err != nil {
				return err
			}
			if c.bom {
				out = out[len(utf8BOM):]
			}
			p.remember(c, id, at, out)
			return nil
		}
	}
	// The story has no passes field: the document is written again
	// whole, from a fresh read.
	p.cached = nil
	f, err := p.read()
	if err != nil {
		return err
	}
	body := f.body
	raws := f.raws
	found := false
	for i, r := range raws {
		var s object
		if err := json.Unmarshal(r, &s); err != nil {
			return badInput("plan: %s: userStories[%d]: %v", p.File, i, err)
		}
		rid, _ := s.get("id")
		var sid string
		if json.Unmarshal(rid, &sid) != nil || sid != id {
			continue
		}
		found = true
		s.set("passes", json.RawMessage("true"))
		if raws[i], err = marshal(&s); err != nil {
			return err
		}
	}
	if !found {
		return &NotFoundError{ID: id, Path: p.File}
	}
	return p.write(f.doc, raws, f.bom, indentOf(body))
}

// remember makes c, the parse of the file before the tick of id whose
// passes value was at, the cache again with body, the file as the tick
// wrote it (without its byte order mark): the story is done, and the
// passes values after it moved by what the tick's value changed in length.
func (p *PRDJSON) remember(c *prdParse, id string, at passesAt, body []byte) {
	nid, ok := statID(p.File)
	if !ok {
		return
	}
	shift := len("true") - (at.end - at.start)
	for k, o := range c.spans {
		if o.start > at.start {
			c.spans[k] = passesAt{o.start + shift, o.end + shift}
		}
	}
	c.spans[id] = passesAt{at.start, at.start + len("true")}
	if i, ok := c.byID[id]; ok {
		c.stories[i].Done = true
	}
	c.body, c.id = body, nid
	p.cached = c
}

// passesSpan finds, in a prd.json document, the story whose id is id and
// the bytes of its passes value: start is -1 when the story has no passes
// field; found is false when no story has that id. ok is false when the
// document does not read as a prd.json (write's path then says why).
func passesSpan(data []byte, id string) (start, end int, found, ok bool) {
	spans, ok := passesSpans(data)
	at, found := spans[id]
	if !found {
		at = passesAt{-1, -1}
	}
	return at.start, at.end, found, ok
}

// passesSpans finds, in one pass over a prd.json document, where each
// story's passes value is (the first story of an id, as passesSpan); nil
// and false when the document does not read as a prd.json.
func passesSpans(data []byte) (map[string]passesAt, bool) {
	var spans map[string]passesAt
	sc := newStoryScan(data)
	ok := sc.storyLists(func(int) bool {
		spans = map[string]passesAt{}
		for sc.dec.More() {
			if !sc.delim('{') {
				return false
			}
			sid, s, e := "", -1, -1
			for sc.dec.More() {
				k, good := sc.key()
				if !good {
					return false
				}
				// As encoding/json matches the fields Stories reads:
				// whatever the case, the last one holding.
				switch strings.ToLower(k) {
				case "id":
					var v json.RawMessage
					if sc.dec.Decode(&v) != nil {
						return false
					}
					sid = ""
					_ = json.Unmarshal(v, &sid)
				case "passes":
					at := sc.next()
					if !sc.skip() {
						return false
					}
					s, e = at, sc.offset()
				default:
					if !sc.skip() {
						return false
					}
				}
			}
			if !sc.delim('}') {
				return false
			}
			if _, seen := spans[sid]; !seen {
				spans[sid] = passesAt{s, e}
			}
		}
		return true
	})
	if !ok {
		return nil, false
	}
	return spans, true
}

// indentOf is the unit of indentation of a JSON document as written: the
// leading space of its first indented line ("  ", "    ", a tab); two
// spaces for a document on one line (snarktank's prd.json, as agents
// write it).
func indentOf(data []byte) string {
	for _, line := range bytes.Split(data, []byte("\n"))[1:] {
		if n := len(line) - len(bytes.TrimLeft(line, " \t")); n > 0 && n < len(line) {
			return string(line[:n])
		}
	}
	return "  "
}

// marshal is json.Marshal without its HTML escaping: a plan's "R&D <b>"
// stays so, not "R\u0026D \u003cb\u003e".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// write puts doc back in the plan's file with raws as its userStories,
// indented by indent, its byte order mark kept.
func (p *PRDJSON) write(doc *object, raws []json.RawMessage, bom bool, indent string) error {
	list, err := marshal(raws)
	if err != nil {
		return err
	}
	doc.set("userStories", list)
	flat, err := marshal(doc)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if bom {
		out.WriteString(utf8BOM)
	}
	if err := json.Indent(&out, flat, "", indent); err != nil {
		return err
	}
	out.WriteByte('\n')
	return writeAtomic(p.File, out.Bytes())
}

// Append adds stories, each a userStories object as another copy of the
// plan holds it (a worker's agent added it there), at the end of
// userStories, keeping every other field and the key order. A story
// without an id, with one the plan has, or listed twice is refused, and
// the plan is left as it was.
func (p *PRDJSON) Append(stories []json.RawMessage) error {
	f, err := p.read()
	if err != nil {
		return err
	}
	have, err := p.stories(f.raws)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range have {
		seen[s.ID] = true
	}
	for i, r := range stories {
		var s prdStory
		if err := json.Unmarshal(r, &s); err != nil {
			return badInput("plan: the story to add #%d: %v", i+1, err)
		}
		if strings.TrimSpace(s.ID) == "" || !validID(s.ID) {
			return badInput("plan: the story to add #%d has no usable id", i+1)
		}
		if seen[s.ID] {
			return badInput("plan: %s has story %s already", p.File, s.ID)
		}
		seen[s.ID] = true
	}
	body := f.body
	if at, sep, ok := appendSpan(body); ok {
		// Written where the list ends, each story as the other copy
		// holds it, after the separator the list's own stories have:
		// the rest of the file keeps its bytes.
		var out bytes.Buffer
		out.Write(body[:at])
		for _, st := range stories {
			out.Write(sep)
			out.Write(bytes.TrimSpace(st))
		}
		out.Write(body[at:])
		if json.Valid(out.Bytes()) {
			if f.bom {
				return writeAtomic(p.File, append([]byte(utf8BOM), out.Bytes()...))
			}
			return writeAtomic(p.File, out.Bytes())
		}
	}
	return p.write(f.doc, append(f.raws, stories...), f.bom, indentOf(body))
}

// appendSpan finds where a story appended to a prd.json document's
// userStories (the last such key, as for load) goes - at, just after its
// last story - and the bytes to put before it: those between its last two
// stories, or a comma and those between the list's bracket and its one
// story. ok is false for an empty list or a document that does not read.
func appendSpan(data []byte) (at int, sep []byte, ok bool) {
	sc := newStoryScan(data)
	found := false
	ok = sc.storyLists(func(open int) bool {
		var starts, ends []int
		for sc.dec.More() {
			starts = append(starts, sc.next())
			if !sc.skip() {
				return false
			}
			ends = append(ends, sc.offset())
		}
		switch n := len(ends); {
		case n == 0:
			found = false
		case n == 1 && starts[0] == open:
			at, sep, found = ends[0], []byte(", "), true // [{...}]
		case n == 1:
			at, sep, found = ends[0], append([]byte(","), data[open:starts[0]]...), true
		default:
			at, sep, found = ends[n-1], data[ends[n-2]:starts[n-1]], true
		}
		return true
	})
	return at, sep, ok && found
}

// storyScan walks a prd.json document token by token, knowing where in
// its bytes each value lies, for the edits that change only the bytes
// they must (passesSpan, appendSpan).
type storyScan struct {
	data []byte
	dec  *json.Decoder
}

func newStoryScan(data []byte) *storyScan {
	return &storyScan{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
}

// delim reads the next token, which must be want.
func (sc *storyScan) delim(want json.Delim) bool {
	t, err := sc.dec.Token()
	d, is := t.(json.Delim)
	return err == nil && is && d == want
}

// key reads an object's next key.
func (sc *storyScan) key() (string, bool) {
	t, err := sc.dec.Token()
	k, is := t.(string)
	return k, err == nil && is
}

// skip reads the next value whole.
func (sc *storyScan) skip() bool {
	var v json.RawMessage
	return sc.dec.Decode(&v) == nil
}

// offset is where the last token or value read ends.
func (sc *storyScan) offset() int { return int(sc.dec.InputOffset()) }

// next is where the next value begins: past the space, the colon and the
// comma after the last token.
func (sc *storyScan) next() int {
	i := sc.offset()
	for i < len(sc.data) && strings.IndexByte(" \t\r\n:,", sc.data[i]) >= 0 {
		i++
	}
	return i
}

// storyLists walks the document's top-level object and calls each for
// every userStories list, just inside its bracket (open: the offset
// there); each reads the list's values. ok is false when the document is
// no object holding such a list, or each says so.
func (sc *storyScan) storyLists(each func(open int) bool) (ok bool) {
	if !sc.delim('{') {
		return false
	}
	lists := 0
	for sc.dec.More() {
		k, good := sc.key()
		if !good {
			return false
		}
		if k != "userStories" {
			if !sc.skip() {
				return false
			}
			continue
		}
		lists++
		if !sc.delim('[') || !each(sc.offset()) || !sc.delim(']') {
			return false
		}
	}
	return lists > 0 && sc.delim('}')
}

// StoriesIn returns the userStories objects of a prd.json document (data)
// whose ids are among ids, as the document holds them.
func StoriesIn(data []byte, ids []string) ([]json.RawMessage, error) {
	f, err := parsePRD("the prd.json given", data)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, r := range f.raws {
		var s prdStory
		if json.Unmarshal(r, &s) == nil && slices.Contains(ids, s.ID) {
			out = append(out, r)
		}
	}
	return out, nil
}

// object is a JSON object that remembers its key order, so rewriting a
// prd.json changes only the field that changed.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("expected a JSON object")
	}
	o.keys, o.vals = nil, map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(k, v)
	}
	_, err = dec.Token()
	return err
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// BranchName is the prd.json's branchName, "" when it has none: the
// branch snarktank/ralph's prompt has the agent work on.
func (p *PRDJSON) BranchName() (string, error) {
	f, err := p.read()
	if err != nil {
		return "", err
	}
	raw, ok := f.doc.get("branchName")
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", badInput("plan: %s: branchName is not a string", p.File)
	}
	return strings.TrimSpace(name), nil
}

// Branch is the branch p names for its work (a prd.json's branchName),
// "" when it names none.
func Branch(p Plan) (string, error) {
	if j, ok := p.(*PRDJSON); ok {
		return j.BranchName()
	}
	return "", nil
}
