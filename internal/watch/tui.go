package watch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// Model is the full-screen view: a bubbletea model over a Source.
type Model struct {
	src      *Source // nil: events arrive only as EventsMsg (tests)
	st       State
	alive    func(int) bool
	now      func() time.Time
	interval time.Duration
	err      error

	width, height int
	sel           int // index into st.Slots
	follow        bool
	help          bool
	output        []string // the followed worker's output, last lines
}

// EventsMsg delivers events to the model.
type EventsMsg []Event

type tickMsg struct{}

// NewModel reads what src has so far (the first frame shows it) and
// follows it every interval.
func NewModel(src *Source, interval time.Duration, alive func(int) bool) *Model {
	m := &Model{src: src, interval: interval, alive: alive, now: time.Now, width: 100, height: 30}
	if src != nil {
		m.poll()
	}
	return m
}

func (m *Model) poll() {
	m.err = m.src.Each(m.st.Apply)
	m.clampSel()
}

func (m *Model) apply(evs []Event) {
	for _, e := range evs {
		m.st.Apply(e)
	}
	m.clampSel()
}

func (m *Model) clampSel() {
	if m.sel >= len(m.st.Slots) {
		m.sel = max(0, len(m.st.Slots)-1)
	}
}

// Init starts the polling.
func (m *Model) Init() tea.Cmd { return m.tick() }

func (m *Model) tick() tea.Cmd {
	if m.src == nil || m.interval <= 0 {
		return nil
	}
	return tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles keys, resizes, polls and events.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case EventsMsg:
		m.apply(msg)
	case tickMsg:
		m.poll()
		m.readOutput()
		return m, m.tick()
	case tea.KeyPressMsg:
		return m, m.key(msg.String())
	}
	return m, nil
}

func (m *Model) key(k string) tea.Cmd {
	if m.help && k != "q" && k != "ctrl+c" {
		m.help = false
		return nil
	}
	switch k {
	case "q", "ctrl+c":
		return tea.Quit
	case "?":
		m.help = true
	case "up", "k":
		if m.sel > 0 {
			m.sel--
		}
	case "down", "j":
		if m.sel < len(m.st.Slots)-1 {
			m.sel++
		}
	case "enter", "f":
		m.follow = !m.follow
		m.readOutput()
	case "esc":
		m.follow = false
	default:
		if len(k) == 1 && k[0] >= '1' && k[0] <= '9' {
			if n := int(k[0] - '1'); n < len(m.st.Slots) {
				m.sel = n
				m.readOutput()
			}
		}
	}
	return nil
}

// maxOutputRead bounds how much of an output log the follow view reads.
const maxOutputRead = 64 << 10

// readOutput loads the end of the selected worker's agent output. Only a
// path inside the agent log directory is read: the log names it, and a
// log is data, not instructions.
func (m *Model) readOutput() {
	if !m.follow || m.src == nil || m.sel >= len(m.st.Slots) {
		return
	}
	rel := m.st.Slots[m.sel].Output
	m.output = nil
	if !strings.HasPrefix(rel, AgentLogDir) || strings.Contains(rel, "..") || rel == AgentLogDir {
		return
	}
	f, err := os.Open(filepath.Join(m.src.Root, filepath.FromSlash(rel)))
	if err != nil {
		m.output = []string{"(no output yet: " + err.Error() + ")"}
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	off := max(0, fi.Size()-maxOutputRead)
	data, _ := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first is cut
	}
	for i, l := range lines {
		lines[i] = termtext.Rewritten(l)
	}
	m.output = lines
}

var (
	titleStyle = lipgloss.NewStyle().Bold(true)
	dimStyle   = lipgloss.NewStyle().Faint(true)
	selStyle   = lipgloss.NewStyle().Reverse(true)
	barDone    = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	kindStyles = map[string]lipgloss.Style{
		"rollback": lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		"failed":   lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		"denied":   lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		"conflict": lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		"refused":  lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		"limit":    lipgloss.NewStyle().Foreground(lipgloss.Color("5")),
		"merged":   lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		"done":     lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		"git":      lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
		"tests":    lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
	}
	kindMarks = map[string]string{"rollback": "↺", "failed": "✘", "denied": "⛔", "conflict": "⚠", "refused": "⚠",
		"limit": "⏸", "merged": "⇢", "done": "✔", "skipped": "⤼", "stopped": "■", "end": "■", "git": "⎇", "tests": "⚠"}
)

// View draws the screen.
// View is the full-screen frame.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	return v
}

// Render draws the screen as text, no taller than the terminal.
func (m *Model) Render() string {
	return fit(m.render(), m.height)
}

// fit keeps the last height lines of frame: on a terminal too short for
// all of it the header goes, not the newest output and the footer (key
// hints, skipped lines, read errors), as a terminal would cut it.
func fit(frame string, height int) string {
	for n := strings.Count(frame, "\n"); height > 0 && n > height; n-- {
		frame = frame[strings.IndexByte(frame, '\n')+1:]
	}
	return frame
}

func (m *Model) render() string {
	w := max(m.width, 40)
	var b strings.Builder
	line := func(s string, style ...lipgloss.Style) {
		s = termtext.Clip(termtext.Clean(s), w)
		if len(style) > 0 {
			s = style[0].Render(s)
		}
		b.WriteString(s + "\n")
	}
	line(m.header(), titleStyle)
	if !m.st.Seen {
		line("")
		line("no run yet: waiting for `wiggum run` to start in this repository (" + EventLog + ")")
		line("")
		line("? help · q quit", dimStyle)
		return b.String()
	}
	b.WriteString(m.progress(w) + "\n")
	line("")
	if m.help {
		for _, l := range helpLines {
			line(l)
		}
		return b.String()
	}
	if m.follow && m.sel < len(m.st.Slots) {
		wk := m.st.Slots[m.sel]
		line(fmt.Sprintf("following worker %d · %s %s · attempt %d/%d · %s", wk.N, wk.Story, wk.Title, wk.Attempt, wk.Attempts, wk.Output), titleStyle)
		rows := max(m.height-6, 1)
		out := m.output
		if len(out) > rows {
			out = out[len(out)-rows:]
		}
		if len(out) == 0 {
			line("(no output yet)", dimStyle)
		}
		for _, l := range out {
			line(l)
		}
		line("")
		line("enter/f/esc back · 1-9 another worker · q quit", dimStyle)
		return b.String()
	}
	line(fmt.Sprintf("  %-2s %-22s %-7s %-8s %-22s %-9s %s", "#", "STORY", "ATTEMPT", "ELAPSED", "TOKENS", "COST", "LAST TOOL CALL"), dimStyle)
	for i, wk := range m.st.Slots {
		s := m.workerRow(wk)
		if i == m.sel {
			line("▸ "+s, selStyle)
		} else {
			line("  " + s)
		}
	}
	line("")
	line("recent", titleStyle)
	rows := max(m.height-len(m.st.Slots)-9, 1)
	notes := m.st.Notices
	if len(notes) > rows {
		notes = notes[len(notes)-rows:]
	}
	if len(notes) == 0 {
		line("  (nothing yet)", dimStyle)
	}
	for i := len(notes) - 1; i >= 0; i-- {
		n := notes[i]
		mark := kindMarks[n.Kind]
		if mark == "" {
			mark = "·"
		}
		s := fmt.Sprintf("  %s %s %s %s", n.Time.Local().Format("15:04:05"), mark, n.Story, n.Text)
		if st, ok := kindStyles[n.Kind]; ok {
			line(s, st)
		} else {
			line(s)
		}
	}
	line("")
	// What went wrong first: a narrow terminal clips the key hints.
	var foot []string
	if m.err != nil {
		foot = append(foot, m.err.Error())
	}
	if m.src != nil && m.src.Bad > 0 {
		foot = append(foot, fmt.Sprintf("%d unreadable log line(s) skipped", m.src.Bad))
	}
	line(strings.Join(append(foot, "↑/↓ or 1-9 select · enter/f follow output · ? help · q quit"), " · "), dimStyle)
	return b.String()
}

var helpLines = []string{
	"keys",
	"  ↑/↓, k/j    select a worker",
	"  1-9         select worker N",
	"  enter, f    follow the selected worker's agent output (again: back)",
	"  esc         back to the overview",
	"  ?           this help (any key closes it)",
	"  q, ctrl-c   quit (the run goes on: watch only reads)",
	"",
	"marks: ✔ done  ⇢ merged  ↺ rolled back  ✘ failed  ⚠ conflict/refused  ⛔ guard denied  ⏸ usage limit  ⤼ skipped",
}

func (m *Model) header() string {
	s := "wiggum watch"
	if !m.st.Seen {
		return s
	}
	s += " · " + m.st.Plan
	if m.st.Branch != "" {
		s += " → " + m.st.Branch
	}
	end := m.now()
	switch {
	case m.st.Ended:
		end = m.st.EndTime
		s += " · ended"
		if m.st.EndError != "" {
			s += " (" + termtext.Clip(m.st.EndError, 60) + ")"
		}
	case m.alive != nil && !m.st.Live(m.alive):
		end = m.st.Last
		s += fmt.Sprintf(" · stopped (pid %d gone, no end logged)", m.st.PID)
	default:
		s += " · live"
		if !m.st.LimitUntil.IsZero() {
			s += " · paused for the usage limit until " + m.st.LimitUntil.Local().Format("15:04")
		}
	}
	s += " · " + end.Sub(m.st.Started).Truncate(time.Second).String()
	if m.st.Workers > 1 {
		s += fmt.Sprintf(" · %d workers", m.st.Workers)
	}
	s += " · " + Dollars(m.st.Cost)
	if m.st.InTokens+m.st.OutTokens > 0 {
		s += " · " + Tokens(m.st.InTokens, m.st.OutTokens)
	}
	return s
}

func (m *Model) progress(w int) string {
	total, done := m.st.Total, m.st.Done
	label := fmt.Sprintf(" %d/%d stories done · iteration %d", done, total, m.st.Iterations)
	n := min(max(w-len(label)-3, 10), 60)
	filled := 0
	if total > 0 {
		filled = min(n, done*n/total)
	}
	return "[" + barDone.Render(strings.Repeat("█", filled)) + strings.Repeat("░", n-filled) + "]" + label
}

func (m *Model) workerRow(wk *Worker) string {
	story := wk.Story
	if wk.Title != "" {
		story += " " + wk.Title
	}
	attempt := fmt.Sprintf("%d/%d", wk.Attempt, wk.Attempts)
	elapsed := "-"
	tool := wk.Tool
	switch {
	case wk.Busy:
		elapsed = m.now().Sub(wk.Started).Truncate(time.Second).String()
		if m.st.Ended || (m.alive != nil && !m.st.Live(m.alive)) {
			elapsed = "-"
		}
	case wk.Outcome != "":
		tool = wk.Outcome
	case wk.Story == "":
		tool = "idle"
	}
	return fmt.Sprintf("%-2d %s %-7s %-8s %-22s %-9s %s", wk.N, column(story, 22), attempt, elapsed,
		Tokens(wk.InTokens, wk.OutTokens), Dollars(wk.Cost), tool)
}

// column is s in exactly n cells, cut or padded: fmt's %-22s counts runes,
// and a CJK title would push the columns after it off the screen.
func column(s string, n int) string {
	s = termtext.Clip(termtext.Clean(s), n)
	return s + strings.Repeat(" ", max(n-termtext.Width(s), 0))
}
