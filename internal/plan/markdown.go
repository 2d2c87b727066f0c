package plan

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/lazyre"
)

// Markdown is a checklist plan: a story is a checkbox line carrying an id
// (`- [ ] US-001: title`); its details are the `### US-001 ...` block.
// Checkbox lines without an id (acceptance criteria) are not stories.
//
// A plan of thousands of stories costs milliseconds to parse, and a loop
// reads it every iteration: the parse is kept while the file's size,
// modification time and inode stay the same, and MarkDone keeps it up to
// date with its own write, so a tick costs one write, not two parses.
type Markdown struct {
	File string

	mu     sync.Mutex
	cached *mdParse
}

// mdParse is one parse of the file, as it was when id was taken.
type mdParse struct {
	id     fileID
	lines  []string
	parsed []mdStory
}

type fileID struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func statID(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = st.Ino
	}
	return id, true
}

// parse returns the file's lines (a copy the caller may change) and its
// stories, from the cache when the file has not changed. The caller holds
// m.mu.
func (m *Markdown) parse() ([]string, []mdStory, error) {
	id, ok := statID(m.File)
	if ok && m.cached != nil && m.cached.id == id {
		return append([]string(nil), m.cached.lines...), m.cached.parsed, nil
	}
	lines, err := m.read()
	if err != nil {
		return nil, nil, err
	}
	parsed := parseMarkdown(lines)
	m.cached = nil
	if ok {
		m.cached = &mdParse{id: id, lines: append([]string(nil), lines...), parsed: parsed}
	}
	return lines, parsed, nil
}

// Kind implements Plan.
func (m *Markdown) Kind() string { return "markdown" }

// Path implements Plan.
func (m *Markdown) Path() string { return m.File }

// storyLine matches `- [ ] US-001: title`, `* [x] **US-2** - title`,
// `1. [ ] T-10 title`. The id must be followed by a non-word character, so
// US-1 never matches the line of US-10.
var storyLine = lazyre.New(`^(\s*(?:[-*+]|\d+[.)])\s+\[)([ xX])(\]\s+(?:\*\*|__)?)([A-Za-z][A-Za-z0-9]*-[0-9]+)\b((?:\*\*|__)?)(.*)$`)

// heading matches a markdown ATX heading and captures its level and text.
var heading = lazyre.New(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

type mdStory struct {
	Story
	line int // index of the checkbox line
}

func (m *Markdown) read() ([]string, error) {
	data, err := os.ReadFile(m.File)
	if err != nil {
		return nil, fmt.Errorf("plan: read %s: %w", m.File, err)
	}
	return strings.SplitAfter(string(data), "\n"), nil
}

// parse finds the stories and their detail blocks, skipping fenced code.
func parseMarkdown(lines []string) []mdStory {
	var stories []mdStory
	details := map[string]string{}
	fence := ""
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
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\r\n")
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			if detailID != "" {
				detail.WriteString(line + "\n")
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			if detailID != "" {
				detail.WriteString(line + "\n")
			}
			continue
		}
		// Cheap byte tests first: the regular expressions below cost a
		// microsecond a line, and a plan of thousands of stories with
		// details has tens of thousands of lines that cannot match.
		if h := headingOf(line); h != nil {
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
		if s := storyOf(line); s != nil {
			stories = append(stories, mdStory{line: i, Story: Story{
				ID:       s[4],
				Title:    cleanTitle(s[6]),
				Done:     s[2] != " ",
				Priority: len(stories),
			}})
		}
	}
	flush()
	for i := range stories {
		stories[i].Details = details[stories[i].ID]
	}
	return stories
}

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
	return storyLine().FindStringSubmatch(line)
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
	_, parsed, err := m.parse()
	if err != nil {
		return nil, err
	}
	out := make([]Story, len(parsed))
	for i, s := range parsed {
		out[i] = s.Story
	}
	return out, nil
}

// MarkDone ticks the checkbox of every line that carries exactly id (a plan
// that lists a story twice gets both ticked) and touches nothing else.
func (m *Markdown) MarkDone(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lines, parsed, err := m.parse()
	if err != nil {
		return err
	}
	found, changed := false, false
	var ticked []int
	for i, s := range parsed {
		if s.ID != id {
			continue
		}
		found = true
		if s.Done {
			continue
		}
		raw := lines[s.line]
		body := strings.TrimRight(raw, "\r\n")
		lines[s.line] = storyLine().ReplaceAllString(body, "${1}x${3}${4}${5}${6}") + raw[len(body):]
		changed = true
		ticked = append(ticked, i)
	}
	if !found {
		return &NotFoundError{ID: id, Path: m.File}
	}
	if !changed {
		return nil
	}
	if err := writeAtomic(m.File, []byte(strings.Join(lines, ""))); err != nil {
		m.cached = nil
		return err
	}
	// Our own write: the parse is the old one with these stories ticked.
	// (A detail block never holds a story line, so details are unchanged.)
	m.cached = nil
	if nid, ok := statID(m.File); ok {
		next := append([]mdStory(nil), parsed...)
		for _, i := range ticked {
			next[i].Done = true
		}
		m.cached = &mdParse{id: nid, lines: lines, parsed: next}
	}
	return nil
}
