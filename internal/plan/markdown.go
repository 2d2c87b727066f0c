package plan

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/lazyre"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Markdown is a checklist plan: a story is a checkbox line carrying an id
// (`- [ ] US-001: title`); its details are the `### US-001 ...` block and
// the lines indented under its line (its acceptance criteria).
// Checkbox lines without an id (acceptance criteria) are not stories.
//
// A plan of thousands of stories costs milliseconds to parse, and a loop
// reads it every iteration: the parse is kept while the file's size,
// modification time and inode stay the same, and MarkDone keeps it up to
// date with its own write. A tick is one byte (the space between the
// brackets becomes an x) written in place, after checking that the line
// is still there as parsed: it costs the same in a plan of 10 stories and
// of 10,000, and a single byte cannot be torn.
type Markdown struct {
	File string

	mu     sync.Mutex
	cached *mdParse
}

// mdParse is one parse of the file, as it was when id was taken.
type mdParse struct {
	id     fileID
	lines  []string
	offs   []int64 // byte offset of each line
	parsed []mdStory
	// open counts the stories not done; first is the index of the first
	// of them (len(parsed) when none): what the loop asks every
	// iteration, kept up to date by ticks so it costs no pass over the
	// plan.
	open, first int
	// byID indexes parsed by story id, built on the first tick.
	byID map[string][]int
	// unread: the open checkboxes that are neither story nor criterion,
	// which a run refuses to start with (Unread).
	unread []unreadBox
}

type fileID struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func statID(path string) (fileID, bool) { return idOf(os.Stat(path)) }

func fileIDOf(f *os.File) (fileID, bool) { return idOf(f.Stat()) }

// idOf is a file's identity from its stat; false when it could not be read.
func idOf(fi os.FileInfo, err error) (fileID, bool) {
	if err != nil {
		return fileID{}, false
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = st.Ino
	}
	return id, true
}

// parse returns the file's parse, from the cache when the file has not
// changed. Callers never change what it holds. The caller holds m.mu.
func (m *Markdown) parse() (*mdParse, error) {
	id, ok := statID(m.File)
	if ok && m.cached != nil && m.cached.id == id {
		return m.cached, nil
	}
	lines, err := m.read()
	if err != nil {
		return nil, err
	}
	parsed, unread := parseMarkdown(lines)
	p := &mdParse{id: id, lines: lines, offs: make([]int64, len(lines)), parsed: parsed, unread: unread}
	if err := m.sameIDTwice(p.parsed); err != nil {
		return nil, err
	}
	var off int64
	for i, l := range lines {
		p.offs[i] = off
		off += int64(len(l))
	}
	p.first = len(p.parsed)
	for i := len(p.parsed) - 1; i >= 0; i-- {
		if !p.parsed[i].Done {
			p.open++
			p.first = i
		}
	}
	m.cached = nil
	if ok {
		m.cached = p
	}
	return p, nil
}

// sameIDTwice refuses a plan that gives two different stories one id (a
// copied line edited into a new story, its id left as it was): the
// second would be ticked with the first, never given to an agent. The
// same line twice is one story, ticked in both places.
func (m *Markdown) sameIDTwice(stories []mdStory) error {
	first := make(map[string]int, len(stories))
	for i, s := range stories {
		j, seen := first[s.ID]
		if !seen {
			first[s.ID] = i
			continue
		}
		if t := stories[j]; t.Title != s.Title {
			return badInput("plan: %s lists two stories as %s (line %d: %q, line %d: %q): the second would be ticked with the first and never run; give each story its own id",
				m.File, s.ID, t.line+1, t.Title, s.line+1, s.Title)
		}
	}
	return nil
}

// Unread refuses a plan with open checkboxes that look like stories but
// carry no id wiggum can take (US-1a, US_2, US-2.1, none at all): they
// would never be given to an agent, and the run would end "0 open", exit
// 0, with them left - worse than a plan where no story reads, which is
// refused too. A run asks before it starts; such a line an agent adds
// later is no reason to fail its attempt (the next run names it), so
// reading the stories does not refuse it. A plan that does not read at
// all is left to the run, which says why.
func (m *Markdown) Unread() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.parse()
	if err != nil || len(p.unread) == 0 {
		return nil
	}
	unread := p.unread
	var lines []string
	for i, u := range unread {
		if i == 5 {
			lines = append(lines, fmt.Sprintf("and %d more", len(unread)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("line %d %q", u.line+1, u.text))
	}
	return badInput("plan: %s has open checkboxes wiggum can take no story id from, which would never be run: %s; give each story an id of letters, a dash and digits (- [ ] US-7: title), and put a checklist item that is no story under its story, indented, or in its ### block",
		m.File, strings.Join(lines, ", "))
}

// Kind implements Plan.
func (m *Markdown) Kind() string { return "markdown" }

// Path implements Plan.
func (m *Markdown) Path() string { return m.File }

// utf8BOM is the byte order mark some editors put at a file's start.
const utf8BOM = "\ufeff"

// storyLine matches `- [ ] US-001: title`, `* [x] **US-2** - title`,
// `1. [ ] T-10 title`. The id must be followed by a non-word character, so
// US-1 never matches the line of US-10.
var storyLine = lazyre.New(`^(\s*(?:[-*+]|\d+[.)])\s+\[)([ xX])(\]\s+(?:\*\*|__)?)([A-Za-z][A-Za-z0-9]*-[0-9]+)\b((?:\*\*|__)?)(.*)$`)

// heading matches a markdown ATX heading and captures its level and text.
var heading = lazyre.New(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

type mdStory struct {
	Story
	line int // index of the checkbox line
	box  int // byte index of the checkbox's mark in that line
	// nested: the lines nested under the story's line, while parsing.
	nested string
}

func (m *Markdown) read() ([]string, error) {
	data, err := statefile.ReadFile(m.File)
	if err != nil {
		return nil, fmt.Errorf("plan: read %s: %w", m.File, err)
	}
	return strings.SplitAfter(string(data), "\n"), nil
}

// unreadBox is an open checkbox line that is no story and no story's
// acceptance criterion: one whose id is not letters-dash-digits, or one
// without an id outside any story's nesting and details block.
type unreadBox struct {
	line int
	text string
}

// parse finds the stories, their detail blocks and the lines nested under
// them, skipping fenced code and HTML comments, and the open checkboxes it
// cannot read as either story or criterion (unreadBox).
func parseMarkdown(lines []string) ([]mdStory, []unreadBox) {
	var stories []mdStory
	var unread []unreadBox
	// comment: inside an HTML comment that began on an earlier line - how
	// a story is parked in a plan (every renderer hides it), so nothing
	// in it is a story to give an agent.
	comment := false
	// storyIndent is the indent of the last story line while the lines
	// after it are nested under it, -1 after a heading or a line as far
	// left as the story's: a checkbox indented deeper is one of its
	// criteria, and what is nested goes to the agent with the story.
	storyIndent := -1
	nest := nested{indent: -1}
	details := map[string]string{}
	fence := ""
	// fenceNested: the open fence began nested under the story, so its
	// lines are the story's whatever their indent.
	fenceNested := false
	detailID, detailLevel := "", 0
	var detail strings.Builder
	flush := func() {
		if detailID != "" {
			if _, seen := details[detailID]; !seen {
				details[detailID] = strings.TrimSpace(detail.String())
			}
		}
		detailID, detailLevel = "", 0
		detail.Reset()
	}
	endNest := func() {
		if storyIndent >= 0 {
			stories[len(stories)-1].nested = nest.text()
		}
		storyIndent = -1
		nest.reset()
	}
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\r\n")
		// A byte order mark (Windows editors write one) is no part of
		// the first line: with it there, the first story went unseen.
		bom := 0
		if i == 0 && strings.HasPrefix(line, utf8BOM) {
			line, bom = line[len(utf8BOM):], len(utf8BOM)
		}
		trimmed := strings.TrimSpace(line)
		if comment {
			comment = !strings.Contains(line, "-->")
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			if detailID != "" {
				detail.WriteString(line + "\n")
			}
			if fenceNested {
				nest.add(line, false)
				fenceNested = fence != ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			if detailID != "" {
				detail.WriteString(line + "\n")
			}
			if storyIndent >= 0 && lineIndent(line) > storyIndent {
				nest.add(line, true)
				fenceNested = true
			} else {
				endNest()
			}
			continue
		}
		if open := strings.LastIndex(line, "<!--"); open >= 0 && !strings.Contains(line[open:], "-->") {
			comment = true
			// What comes before the comment on its line is still read.
			line = line[:open]
		}
		// Cheap byte tests first: the regular expressions below cost a
		// microsecond a line, and a plan of thousands of stories with
		// details has tens of thousands of lines that cannot match.
		h := headingOf(line)
		var s []string
		if h == nil {
			s = storyOf(line)
		}
		// A heading, a story or a line as far left as the story's ends
		// what is nested under it; a blank line does not.
		if storyIndent >= 0 {
			switch {
			case strings.TrimSpace(line) == "":
				nest.add("", false)
			case h == nil && s == nil && lineIndent(line) > storyIndent:
				nest.add(line, true)
			default:
				endNest()
			}
		}
		if h != nil {
			level := len(h[1])
			if detailID != "" && level <= detailLevel {
				flush()
			}
			if id := leadingID(h[2]); id != "" && detailID == "" {
				detailID, detailLevel = id, level
			}
			if detailID != "" {
				detail.WriteString(line + "\n")
			}
			continue
		}
		if detailID != "" {
			detail.WriteString(line + "\n")
		}
		if s != nil {
			stories = append(stories, mdStory{line: i, box: bom + len(s[1]), Story: Story{
				ID:       s[4],
				Title:    cleanTitle(s[6]),
				Done:     s[2] != " ",
				Priority: len(stories),
			}})
			storyIndent = lineIndent(line)
		} else if indent, rest, ok := openBox(line); ok && rest != "" {
			criterion := detailID != "" || (storyIndent >= 0 && indent > storyIndent)
			if malformedID(rest) || !criterion {
				unread = append(unread, unreadBox{line: i, text: strings.TrimSpace(line)})
			}
		}
	}
	flush()
	endNest()
	for i := range stories {
		s := &stories[i]
		s.Details = details[s.ID]
		// What is nested under the story's line comes as a prd.json's
		// acceptanceCriteria do: after the story's own text.
		switch {
		case s.nested == "":
		case s.Details == "":
			s.Details = s.ID + ": " + s.Title + "\n\nAcceptance criteria:\n" + s.nested
		default:
			s.Details += "\n\nAcceptance criteria:\n" + s.nested
		}
		s.nested = ""
	}
	return stories, unread
}

func lineIndent(line string) int { return len(line) - len(strings.TrimLeft(line, " \t")) }

// nested collects the lines nested under a story's line, to be given
// without the indent they share.
type nested struct {
	lines []string
	// indent is the least indent of the lines outside fences, -1 before
	// the first: a fence's lines keep theirs.
	indent int
}

func (n *nested) reset() { n.lines, n.indent = n.lines[:0], -1 }

// add takes line; own says whether its indent counts towards the one
// the lines share.
func (n *nested) add(line string, own bool) {
	line = strings.TrimRight(line, " \t")
	if line == "" && len(n.lines) == 0 {
		return
	}
	if own {
		if in := lineIndent(line); n.indent < 0 || in < n.indent {
			n.indent = in
		}
	}
	n.lines = append(n.lines, line)
}

// text is the lines without their shared indent, blank lines at the end
// dropped; "" when nothing is nested.
func (n *nested) text() string {
	size := 0
	for _, l := range n.lines {
		size += len(l) + 1
	}
	var b strings.Builder
	b.Grow(size)
	for _, l := range n.lines {
		b.WriteString(l[min(max(n.indent, 0), lineIndent(l)):])
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), " \t\n")
}

// openBox reports whether line is an open checkbox list item, with its
// indent and the text after the box.
func openBox(line string) (indent int, rest string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	indent = len(line) - len(t)
	n := 0
	if t != "" && (t[0] == '-' || t[0] == '*' || t[0] == '+') {
		n = 1
	} else {
		for n < len(t) && t[n] >= '0' && t[n] <= '9' {
			n++
		}
		if n == 0 || n == len(t) || (t[n] != '.' && t[n] != ')') {
			return 0, "", false
		}
		n++
	}
	after := strings.TrimLeft(t[n:], " \t")
	if len(after) == len(t[n:]) || !strings.HasPrefix(after, "[ ]") {
		return 0, "", false
	}
	return indent, strings.TrimSpace(after[3:]), true
}

// malformedID reports whether text starts with what is meant as a story
// id but is not one wiggum reads: a suffix after the digits (US-1a,
// US-2.1) or an underscore for the dash (US_2).
func malformedID(text string) bool {
	t := strings.TrimLeft(text, "*_")
	j := 0
	for j < len(t) && isAlnum(t[j]) {
		j++
	}
	if j == 0 || !isLetter(t[0]) || j == len(t) || (t[j] != '-' && t[j] != '_') {
		return false
	}
	k := j + 1
	for k < len(t) && t[k] >= '0' && t[k] <= '9' {
		k++
	}
	if k == j+1 {
		return false
	}
	// The token's end: it must be followed by the title's separator (or
	// nothing) to be meant as an id, not a word such as UTF-8-ish.
	end := k
	for end < len(t) && (isAlnum(t[end]) || t[end] == '.' || t[end] == '_' || t[end] == '-') {
		end++
	}
	if end < len(t) && !strings.ContainsRune(" \t:*", rune(t[end])) {
		return false
	}
	return t[j] == '_' || end > k
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

func isAlnum(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' }

// headingOf matches heading without its backtracking: up to six '#',
// whitespace, then the text without closing '#'s.
func headingOf(line string) []string {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(line) || !isSpace(line[n]) {
		return nil
	}
	text := strings.TrimRight(line[n:], " \t\n\f\r")
	text = strings.TrimRight(text, "#")
	text = strings.Trim(text, " \t\n\f\r")
	return []string{line, line[:n], text}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// storyOf matches storyLine, testing first what any match needs: a list
// marker, a checkbox, then an id's letter-digits-dash-digit shape.
func storyOf(line string) []string {
	t := strings.TrimLeft(line, " \t")
	if t == "" {
		return nil
	}
	switch c := t[0]; {
	case c == '-' || c == '*' || c == '+' || (c >= '0' && c <= '9'):
	default:
		return nil
	}
	i := strings.Index(t, "[")
	if i < 0 || i+2 >= len(t) || t[i+2] != ']' {
		return nil
	}
	rest := strings.TrimLeft(t[i+3:], " \t*_")
	j := 0
	for j < len(rest) && (rest[j] >= 'A' && rest[j] <= 'Z' || rest[j] >= 'a' && rest[j] <= 'z' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	if j == 0 || j+1 >= len(rest) || rest[j] != '-' || rest[j+1] < '0' || rest[j+1] > '9' {
		return nil
	}
	m := storyLine().FindStringSubmatch(line)
	// The regular expression's word boundary lets US-2.1 read as US-2
	// titled ".1": that is no id wiggum reads (malformedID).
	if m != nil && m[5] == "" && len(m[6]) > 1 && m[6][0] == '.' && isAlnum(m[6][1]) {
		return nil
	}
	return m
}

// LineStoryID is the id of the story line lists as a markdown plan's
// story line, read on its own (outside any fence or comment); "" when it
// lists none.
func LineStoryID(line string) string {
	if s := storyOf(strings.TrimRight(line, "\r\n")); s != nil {
		return s[4]
	}
	return ""
}

var headingID = lazyre.New(`^(?:\*\*|__)?([A-Za-z][A-Za-z0-9]*-[0-9]+)\b`)

func leadingID(text string) string {
	if m := headingID().FindStringSubmatch(strings.TrimSpace(text)); m != nil {
		return m[1]
	}
	return ""
}

func cleanTitle(rest string) string {
	t := strings.TrimSpace(rest)
	for _, p := range []string{":", "—", "–", "-"} {
		if strings.HasPrefix(t, p) {
			t = strings.TrimSpace(strings.TrimPrefix(t, p))
			break
		}
	}
	return t
}

// Stories implements Plan.
func (m *Markdown) Stories() ([]Story, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.parse()
	if err != nil {
		return nil, err
	}
	out := make([]Story, len(p.parsed))
	for i, s := range p.parsed {
		out[i] = s.Story
	}
	return out, nil
}

// next implements NextOpen without a pass over the plan: from the first
// open story, past those done or skipped.
func (m *Markdown) next(skip map[string]bool) (*Story, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.parse()
	if err != nil {
		return nil, 0, err
	}
	for i := p.first; i < len(p.parsed); i++ {
		if s := p.parsed[i].Story; !s.Done && !skip[s.ID] {
			return &s, p.open, nil
		}
	}
	return nil, p.open, nil
}

// MarkDone ticks the checkbox of every line that carries exactly id (a plan
// that lists a story twice gets both ticked) and touches nothing else.
func (m *Markdown) MarkDone(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.parse()
	if err != nil {
		return err
	}
	if p.byID == nil {
		p.byID = make(map[string][]int, len(p.parsed))
		for i, s := range p.parsed {
			p.byID[s.ID] = append(p.byID[s.ID], i)
		}
	}
	all, found := p.byID[id]
	if !found {
		return &NotFoundError{ID: id, Path: m.File}
	}
	var ticked []int
	for _, i := range all {
		if !p.parsed[i].Done {
			ticked = append(ticked, i)
		}
	}
	if len(ticked) == 0 {
		return nil
	}
	if m.cached == p {
		done, err := m.tickInPlace(p, ticked)
		if err != nil || done {
			return err
		}
	}
	// The file changed under the parse (or has no stable identity): write
	// it whole from a fresh read, atomically.
	m.cached = nil
	if p, err = m.parse(); err != nil {
		return err
	}
	ticked = ticked[:0]
	for i, s := range p.parsed {
		if s.ID == id && !s.Done {
			raw := p.lines[s.line]
			body := strings.TrimRight(raw, "\r\n")
			bom := ""
			if s.line == 0 && strings.HasPrefix(body, utf8BOM) {
				bom, body = utf8BOM, body[len(utf8BOM):]
			}
			p.lines[s.line] = bom + storyLine().ReplaceAllString(body, "${1}x${3}${4}${5}${6}") + raw[len(bom)+len(body):]
			ticked = append(ticked, i)
		}
	}
	if len(ticked) == 0 {
		return nil
	}
	// The parse is changed in place from here: it is no longer the
	// cache's until remember makes it so again.
	m.cached = nil
	if err := writeAtomic(m.File, []byte(strings.Join(p.lines, ""))); err != nil {
		return err
	}
	m.remember(p, ticked)
	return nil
}

// tickInPlace writes the mark of each ticked story's line in place: one
// byte each, after checking, on the open file, that it is the file parsed
// and the line is still there byte for byte. It reports false (nothing
// written) when the file is not the one parsed.
func (m *Markdown) tickInPlace(p *mdParse, ticked []int) (bool, error) {
	f, err := os.OpenFile(m.File, os.O_RDWR, 0)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	if id, ok := fileIDOf(f); !ok || id != p.id {
		return false, nil
	}
	for _, i := range ticked {
		s := p.parsed[i]
		line := p.lines[s.line]
		buf := make([]byte, len(line))
		if n, _ := f.ReadAt(buf, p.offs[s.line]); n != len(buf) || string(buf) != line {
			return false, nil
		}
		if line[s.box] != ' ' {
			return false, nil
		}
	}
	// The parse is changed in place from here: it is no longer the
	// cache's until remember makes it so again.
	m.cached = nil
	for _, i := range ticked {
		s := p.parsed[i]
		if _, err := f.WriteAt([]byte{'x'}, p.offs[s.line]+int64(s.box)); err != nil {
			return true, fmt.Errorf("plan: write %s: %w", m.File, err)
		}
		l := p.lines[s.line]
		p.lines[s.line] = l[:s.box] + "x" + l[s.box+1:]
	}
	if err := f.Close(); err != nil {
		return true, fmt.Errorf("plan: write %s: %w", m.File, err)
	}
	m.remember(p, ticked)
	return true, nil
}

// remember makes p, changed by our own write, the cache again: the stories
// ticked are done (a detail block never holds a story line, nor do the
// lines nested under a story, so details are unchanged; a tick changes no
// line's length, so offsets stay).
// Nothing outside the plan holds p's slices: Stories hands out copies.
func (m *Markdown) remember(p *mdParse, ticked []int) {
	nid, ok := statID(m.File)
	if !ok {
		return
	}
	for _, i := range ticked {
		if !p.parsed[i].Done {
			p.parsed[i].Done = true
			p.open--
		}
	}
	for p.first < len(p.parsed) && p.parsed[p.first].Done {
		p.first++
	}
	p.id = nid
	m.cached = p
}
