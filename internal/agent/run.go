package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/proc"
)

// Options tunes Run.
type Options struct {
	Dir    string
	Env    []string // full environment
	Prompt string   // written to the agent's stdin, then stdin is closed
	// Timeout bounds the whole run; IdleTimeout bounds the time without any
	// output. On expiry the process group gets SIGTERM, then SIGKILL after
	// Grace. Zero means no bound.
	Timeout, IdleTimeout, Grace time.Duration
	Hold                        *os.File // the agent lock, kept by the supervisor
	// ShellDone is called (from the goroutine reading the output) each
	// time the event stream reports a shell command's result: the
	// command's PreToolUse hooks have run by then.
	ShellDone func()
	// Pool, when set, runs the agent on a supervisor kept between runs
	// (a loop's), instead of starting one for this run.
	Pool *proc.Pool
	// Line receives each output line that is not a stream-json event;
	// Event receives what stream-json events say. Both may be nil; both are
	// called from one goroutine, never concurrently.
	Line  func(string)
	Event func(Event)
}

// Stop reasons.
const (
	StopTimeout     = "timeout"
	StopIdle        = "idle"
	StopInterrupted = "interrupted"
)

// Result is how one agent run ended.
type Result struct {
	ExitCode int           `json:"exit_code"`
	Stopped  string        `json:"stopped,omitempty"` // why wiggum stopped it, or ""
	Duration time.Duration `json:"duration"`
	Output   string        `json:"-"` // the last tailBytes of output, events rendered as text
	Usage    Usage         `json:"usage"`
	Limit    *Limit        `json:"-"`
	// ToolCalls counts the tool calls seen in the agent's event stream;
	// Error is the last error the stream reported.
	ToolCalls int    `json:"tool_calls,omitempty"`
	Error     string `json:"-"`
	// ShellCalls counts, of ToolCalls, the shell commands: each one goes
	// through wiggum's guard hook when the agent's hooks run.
	ShellCalls int `json:"shell_calls,omitempty"`
	events     bool
}

// Unstarted reports whether the agent failed before doing anything: it
// exited non-zero with no tool call, no model token and no usage limit.
// Only an agent whose event stream wiggum reads can tell.
func (r *Result) Unstarted() bool {
	return r.events && r.ExitCode != 0 && r.Stopped == "" && r.Limit == nil && r.ToolCalls == 0 &&
		r.Usage.InputTokens == 0 && r.Usage.OutputTokens == 0
}

// Closing is the agent's own last word on how it ended: for a client
// whose event stream wiggum reads, the error the stream closed with ("" for
// none - the model's text and the tools' output are not the client's);
// for another command, the last lines of its output.
func (r *Result) Closing() string {
	if r.events {
		return r.Error
	}
	out := strings.TrimRight(r.Output, "\n")
	if i := len(out) - closingBytes; i > 0 {
		out = out[i:]
	}
	return out
}

// closingBytes is how much of a plain command's output is its last word.
const closingBytes = 2 << 10

// CannotStart reports whether the agent's command could not be run at
// all: exit status 127 (not found: the shell's, or the supervisor's own
// "cannot start") or 126 (found, not executable), with no tool call and
// no model token. Any command can tell, built-in or not.
func (r *Result) CannotStart() bool {
	return (r.ExitCode == 127 || r.ExitCode == 126) && r.Stopped == "" && r.Limit == nil && r.ToolCalls == 0 &&
		r.Usage.InputTokens == 0 && r.Usage.OutputTokens == 0
}

// Unusable describes an agent that failed before doing anything, in its
// own words: the last error it reported, else the end of its output.
func (r *Result) Unusable(name string) *UnusableError {
	msg := strings.TrimSpace(r.Error)
	if msg == "" {
		lines := strings.Split(strings.TrimSpace(r.Output), "\n")
		msg = strings.Join(lines[max(0, len(lines)-5):], "\n")
	}
	if msg == "" {
		msg = "no output"
	}
	return &UnusableError{Agent: name, Reason: fmt.Sprintf("it exited with status %d before doing anything: %s", r.ExitCode, msg)}
}

const (
	tailBytes = 64 << 10
	// maxShown bounds the text of a line that is not an event, as it is
	// shown and kept in the output's tail.
	maxShown = 4 << 10
	// drainAfterExit is how long output may keep flowing after the
	// supervisor is gone: only a process that escaped the group (setsid)
	// can still hold the pipe, and it must not hold up the loop.
	drainAfterExit = 2 * time.Second
)

// Run starts the agent under a supervisor and waits for it. Cancelling ctx
// stops the agent (SIGTERM to its group, SIGKILL after Grace).
func Run(ctx context.Context, prof Profile, opts Options) (*Result, error) {
	start := time.Now()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("agent: output pipe: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("agent: input pipe: %w", err)
	}
	var started func()
	if prof.StartAlone {
		if started, err = startAlone(ctx, prof.Name); err != nil {
			outR.Close()
			outW.Close()
			inR.Close()
			inW.Close()
			return nil, fmt.Errorf("agent: %w", err)
		}
		defer started()
	}
	p, err := proc.Start(ctx, prof.Argv, proc.Options{
		Dir: opts.Dir, Env: append(append([]string(nil), opts.Env...), prof.Env...), Stdin: inR, Stdout: outW, Stderr: outW, Grace: opts.Grace, Hold: opts.Hold,
		Pool: opts.Pool,
	})
	outW.Close()
	inR.Close()
	if err != nil {
		outR.Close()
		inW.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	go func() {
		// An agent that never reads its prompt gets EPIPE here, not a hang.
		_, _ = io.WriteString(inW, opts.Prompt)
		inW.Close()
	}()

	res := &Result{}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	r := &reader{opts: opts, parser: parser{now: time.Now}, last: &last, firstLine: started}
	if started != nil {
		// The next agent of the kind may start once this one has been
		// at it a while, whatever it prints.
		t := time.AfterFunc(startAloneFor, started)
		defer t.Stop()
	}
	drained := make(chan struct{})
	go func() {
		r.read(outR)
		close(drained)
	}()

	var mu sync.Mutex
	stop := func(why string) {
		mu.Lock()
		if res.Stopped == "" {
			res.Stopped = why
		}
		mu.Unlock()
		p.Signal(syscall.SIGTERM)
	}
	var timeout <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if opts.IdleTimeout > 0 {
		// At least a millisecond: a quarter of a limit under 4ns is no
		// interval, and NewTicker panics on it.
		t := time.NewTicker(max(min(opts.IdleTimeout/4, time.Second), time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case <-p.Done():
			break wait
		case <-ctx.Done():
			stop(StopInterrupted)
			ctx = context.Background()
		case <-timeout:
			stop(StopTimeout)
			timeout = nil
		case <-tick:
			if time.Since(time.Unix(0, last.Load())) >= opts.IdleTimeout {
				stop(StopIdle)
				tick = nil
			}
		}
	}
	code, werr := p.Wait()
	select {
	case <-drained:
	case <-time.After(drainAfterExit):
	}
	outR.Close()
	<-drained
	// Unblocks the prompt writer if something that escaped the group still
	// holds stdin without reading it.
	inW.Close()
	if werr != nil {
		return nil, fmt.Errorf("agent: wait: %w", werr)
	}
	mu.Lock()
	defer mu.Unlock()
	res.ExitCode = code
	res.Duration = time.Since(start)
	res.Output = r.tail.String()
	res.Usage = r.parser.usage
	res.Limit = r.parser.limit
	if res.Stopped == StopTimeout || res.Stopped == StopIdle {
		if lim := r.parser.stoppedOffline(); lim != nil {
			res.Limit = lim
		}
	}
	res.ToolCalls, res.ShellCalls = r.parser.tools, r.parser.shells
	res.Error = r.parser.lastError
	res.events = prof.Events
	return res, nil
}

// reader drains the agent's output line by line.
type reader struct {
	opts   Options
	parser parser
	last   *atomic.Int64
	tail   tail
	// firstLine, when set, is called at the agent's first line of
	// output (StartAlone).
	firstLine func()
}

func (r *reader) read(f io.Reader) {
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	over := 0 // bytes of the line past maxLine, dropped
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			r.last.Store(time.Now().UnixNano())
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// A huge line: keep reading it whole up to maxLine; past
			// that, count what is dropped.
			if len(long)+len(chunk) <= maxLine && over == 0 {
				long = append(long, chunk...)
			} else {
				over += len(chunk)
			}
			continue
		}
		if over > 0 {
			// Longer than maxLine: no event can be read from what is
			// kept, so it is shown clipped, with its size.
			shown := min(len(long), maxShown)
			r.handle(long[:shown], len(long)-shown+over+len(bytes.TrimRight(chunk, "\r\n")))
			long, over = long[:0], 0
		} else {
			if len(long) > 0 {
				chunk = append(long, chunk...)
				long = long[:0]
			}
			if len(chunk) > 0 {
				r.handle(chunk, 0)
			}
		}
		if cap(long) > 1<<20 {
			long = nil // a huge line's buffer is not kept for the run
		}
		if err != nil {
			return
		}
	}
}

// handle takes one line of the agent's output: all of it, or (a line over
// maxLine) its start, dropped bytes of it left out.
func (r *reader) handle(line []byte, dropped int) {
	if r.firstLine != nil {
		r.firstLine()
		r.firstLine = nil
	}
	// A copy: the parser may keep parts of it, and line is read into
	// again.
	line = bytes.Clone(bytes.TrimRight(line, "\r\n"))
	done := r.parser.shellsDone
	if dropped == 0 {
		if events, ok := r.parser.line(line); ok {
			if r.parser.shellsDone > done && r.opts.ShellDone != nil {
				r.opts.ShellDone()
			}
			for _, e := range events {
				r.tail.add("[" + e.Kind + "] " + e.Text + "\n")
				if r.opts.Event != nil {
					r.opts.Event(e)
				}
			}
			return
		}
	}
	// Not an event: shown as it is, clipped - megabytes of one line
	// (raw JSON of a client) said nothing to the person reading.
	text := string(line[:min(len(line), maxShown)])
	if dropped += len(line) - len(text); dropped > 0 {
		text = strings.ToValidUTF8(text, "") + fmt.Sprintf(" … [%d more bytes of this line not shown]", dropped)
	}
	r.tail.add(text + "\n")
	if r.opts.Line != nil {
		r.opts.Line(text)
	}
}

// tail keeps the last tailBytes of what it is given.
type tail struct{ b []byte }

func (t *tail) add(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > 2*tailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-tailBytes:]...)
	}
}

func (t *tail) String() string {
	if len(t.b) > tailBytes {
		return string(t.b[len(t.b)-tailBytes:])
	}
	return string(t.b)
}

// maxLine bounds the line kept whole to be parsed: a claude event carries
// a whole file (an Edit's tool_use_result of a 2 MB fixture, a long final
// answer), and one cut in pieces lost its cost and tokens (--max-cost was
// not enforced) and was printed raw. A variable for tests.
var maxLine = 64 << 20

// startAloneFor bounds how long a StartAlone agent that prints nothing
// holds the next one back.
var startAloneFor = 10 * time.Second

// starting holds one token per agent name whose start is under way.
var starting sync.Map // name -> chan struct{} (capacity 1)

// startAlone waits until no other agent of the name is starting, and
// returns what ends this one's start; calling it more than once is fine.
func startAlone(ctx context.Context, name string) (func(), error) {
	ch, _ := starting.LoadOrStore(name, make(chan struct{}, 1))
	gate := ch.(chan struct{})
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-gate }) }, nil
}
