package loop

import (
	"bytes"
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
	// echo holds agent output not yet written: it goes out in batches,
	// at most echoEvery after its first line or at echoMax, with one
	// redraw of the status line per batch - a write and a redraw per
	// line held a chatty agent back to a few MB/s.
	echo    bytes.Buffer
	echoDue *time.Timer // set while a batch waits for its time
}

const (
	echoEvery = 100 * time.Millisecond
	echoMax   = 64 << 10
)

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
	d.echo.WriteString(termtext.Lines(fmt.Sprintf(format, args...)) + "\n")
	d.flush()
	d.draw()
}

// line is one line of the agent's own output, as a terminal would show
// it last. It waits in the echo batch; the batch's timer writes it out
// with the status line.
func (d *display) line(s string) {
	if d.quiet {
		return
	}
	s = termtext.Rewritten(s)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.activity = s
	d.echo.WriteString(termtext.Lines("  │ " + s))
	d.echo.WriteByte('\n')
	if d.echo.Len() >= echoMax {
		d.flush() // the status line comes back when the batch is due
	}
	if d.echoDue == nil {
		d.echoDue = time.AfterFunc(echoEvery, d.echoed)
	}
}

// echoed writes out the batch that fell due, and the status line under it.
func (d *display) echoed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.echoDue = nil
	if d.echo.Len() == 0 && d.drawn {
		return
	}
	d.flush()
	d.draw()
}

// flush writes out the echo batch in one write, above the status line,
// which it takes away.
func (d *display) flush() {
	d.clear()
	if d.echo.Len() > 0 {
		_, _ = d.w.Write(d.echo.Bytes())
		d.echo.Reset()
	}
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
	if d.echoDue != nil {
		d.echoDue.Stop() // one already due finds nothing left to write
		d.echoDue = nil
	}
	d.flush()
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
