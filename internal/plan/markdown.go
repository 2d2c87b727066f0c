package plan

import (
	"fmt"
	"os"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/lazyre"
)

// Markdown is a checklist plan: a story is a checkbox line carrying an id
// (`- [ ] US-001: title`); its details are the `### US-001 ...` block.
// Checkbox lines without an id (acceptance criteria) are not stories.
type Markdown struct{ File string }

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
		if h := heading().FindStringSubmatch(line); h != nil {
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
		if s := storyLine().FindStringSubmatch(line); s != nil {
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
	lines, err := m.read()
	if err != nil {
		return nil, err
	}
	parsed := parseMarkdown(lines)
	out := make([]Story, len(parsed))
	for i, s := range parsed {
		out[i] = s.Story
	}
	return out, nil
}

// MarkDone ticks the checkbox of every line that carries exactly id (a plan
// that lists a story twice gets both ticked) and touches nothing else.
func (m *Markdown) MarkDone(id string) error {
	lines, err := m.read()
	if err != nil {
		return err
	}
	found, changed := false, false
	for _, s := range parseMarkdown(lines) {
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
	}
	if !found {
		return &NotFoundError{ID: id, Path: m.File}
	}
	if !changed {
		return nil
	}
	return writeAtomic(m.File, []byte(strings.Join(lines, "")))
}
