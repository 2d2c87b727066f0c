package loop

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// display is what a person watching the loop sees: on a terminal, a status
// line (story, elapsed time, latest agent activity) redrawn in place under
// the scrolling output; elsewhere, plain lines only.
type display struct {
	mu       sync.Mutex
	w        io.Writer
	width    func() int // the terminal's columns now (0: unknown): a status line that wraps cannot be redrawn in place
	live     bool
	quiet    bool
	status   string // current story, for the status line
	activity string
	since    time.Time
	drawn    bool
	stop     chan struct{}
	done     chan struct{}
}

func newDisplay(w io.Writer, live, quiet bool, width func() int) *display {
	return &display{w: w, live: live, quiet: quiet, width: width}
}

// printf prints a line above the status line. What it holds from an agent,
// a plan or git (titles, tool calls, output, errors) is only ever shown on
// the terminal, never interpreted: this and draw are where the run's text
// is written, and they clean it.
func (d *display) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	fmt.Fprint(d.w, termtext.Lines(fmt.Sprintf(format, args...))+"\n")
	d.draw()
}

// line is one line of the agent's own output, as a terminal would show
// it last.
func (d *display) line(s string) {
	if d.quiet {
		return
	}
	s = termtext.Rewritten(s)
	d.mu.Lock()
	d.activity = s
	d.mu.Unlock()
	d.printf("  │ %s", s)
}

// event is what stream-json says the agent did.
func (d *display) event(e agent.Event) {
	d.mu.Lock()
	d.activity = e.Kind + ": " + e.Text
	d.mu.Unlock()
	if d.quiet && e.Kind == "text" {
		return
	}
	text := e.Text
	if e.Kind == "text" {
		text = firstLineOf(text)
	}
	d.printf("  ▸ %s: %s", e.Kind, text)
}

// phase is what the loop itself is doing now (committing: the user's git
// hooks run), for the status line.
func (d *display) phase(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.activity = s
	d.clear()
	d.draw()
}

// begin starts the status line for a story.
func (d *display) begin(status string) {
	d.mu.Lock()
	d.status, d.activity, d.since = status, "starting", time.Now()
	d.mu.Unlock()
	if !d.live {
		return
	}
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d.mu.Lock()
				d.clear()
				d.draw()
				d.mu.Unlock()
			}
		}
	}(d.stop, d.done)
}

// end removes the status line.
func (d *display) end() {
	if d.stop != nil {
		close(d.stop)
		<-d.done
		d.stop = nil
	}
	d.mu.Lock()
	d.clear()
	d.status = ""
	d.mu.Unlock()
}

func (d *display) clear() {
	if d.live && d.drawn {
		fmt.Fprint(d.w, "\r\x1b[K")
		d.drawn = false
	}
}

func (d *display) draw() {
	if !d.live || d.status == "" {
		return
	}
	el := time.Since(d.since).Truncate(time.Second)
	cols := 0
	if d.width != nil {
		cols = d.width() // each time: the window may have been narrowed
	}
	fmt.Fprint(d.w, statusLine(fmt.Sprintf("⏵ %s · %s · %s", d.status, el, d.activity), cols))
	d.drawn = true
}

// statusLine is s as one line that fits in cols terminal columns (80 when
// unknown) without wrapping: clear can only take back the row the cursor
// is on, and a wrapped line would leave a copy of itself at every redraw.
// It is measured in cells (a CJK character or an emoji takes two), its
// tabs and newlines are spaces, and the last column stays free (a line
// that fills it wraps the cursor on some terminals).
func statusLine(s string, cols int) string {
	if cols <= 0 {
		cols = 80
	}
	return termtext.Clip(termtext.Clean(s), max(cols-1, 1))
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
