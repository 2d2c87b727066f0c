package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/guard"
	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Guard modes.
const (
	GuardSession = "session" // the guard is on while a wiggum session holds the lock
	GuardAlways  = "always"
	GuardOff     = "off"
)

// Options tune the agent hooks; `wiggum install` writes them into the hook
// command line, so a call needs no configuration file.
type Options struct {
	Guard       string // GuardSession (default), GuardAlways or GuardOff
	RequireRead bool   // deny editing a file not read first in this conversation
	// Allow: the person's exceptions to the command guard (guard.Policy.Allow).
	Allow   []string
	Verbose io.Writer
}

// MaxPayload caps what a hook reads from stdin; a larger payload is not
// analysed (the agent truncates tool output long before this).
const MaxPayload = 16 << 20

// stdinWait bounds how long a hook waits for its payload: an agent that
// never closes stdin must not hang itself.
var stdinWait = 10 * time.Second

// Run answers one agent hook call: it reads the payload from stdin, writes
// the agent's answer to stdout and never fails. Whatever goes wrong (bad,
// empty, huge or binary input, an unknown event, an internal error, a panic)
// ends in valid output and a line in the debug log.
func Run(ctx context.Context, agent string, stdin io.Reader, stdout io.Writer, opts Options) {
	ad, ok := Adapters[agent]
	if !ok {
		return
	}
	var ev Event
	var resp Response
	var root string
	defer func() {
		if r := recover(); r != nil {
			debugLog(root, opts, "panic in %s hook: %v\n%s", agent, r, debug.Stack())
			resp = Response{}
		}
		out := safeRender(ad, ev, resp)
		_, _ = stdout.Write(out)
	}()
	data, err := readPayload(stdin)
	if errors.Is(err, errTooLarge) || errors.Is(err, errUnended) {
		why := fmt.Sprintf("is over %d bytes, more than wiggum's guard reads", MaxPayload)
		if errors.Is(err, errUnended) {
			why = fmt.Sprintf("did not end within %s", stdinWait)
		}
		ev, root, resp = unread(ad, data, opts, why, fmt.Sprintf("%s hook: %v", agent, err))
		return
	}
	if err != nil {
		debugLog("", opts, "%s hook: %v", agent, err)
		return
	}
	ev, err = ad.Parse(data)
	if err != nil {
		// JSON the decoder refuses (too deeply nested, say) is unread
		// too: what its leading fields say it is decides the answer.
		ev, root, resp = unread(ad, data, opts, "cannot be decoded", fmt.Sprintf("%s hook: unreadable payload (%d bytes): %v", agent, len(data), err))
		return
	}
	if ev.Cwd == "" {
		ev.Cwd, _ = os.Getwd()
	}
	root = treeOf(ev.Cwd)
	resp = handle(ctx, ev, root, opts)
}

// unread answers a payload the hook could not read whole: the event its
// leading fields name, the tree it runs in, and for a PreToolUse while the
// guard is on an ask saying why, since unread is not allowed. The failure
// goes to the debug log of that tree.
func unread(ad Adapter, data []byte, opts Options, why, logLine string) (Event, string, Response) {
	ev := oversized(ad, data)
	if ev.Cwd == "" {
		ev.Cwd, _ = os.Getwd()
	}
	root := treeOf(ev.Cwd)
	debugLog(root, opts, "%s", logLine)
	if ev.Kind != KindPreTool {
		return ev, root, Response{}
	}
	session.MarkGuardSeen() // it answers for the call
	if !guardOn(root, opts) {
		return ev, root, Response{}
	}
	return ev, root, Response{Decision: guard.Ask, Reason: "wiggum: this tool call's hook payload " + why + ", so wiggum cannot tell whether the call is safe"}
}

// safeRender never lets an adapter bug escape as a crash.
func safeRender(ad Adapter, ev Event, r Response) (out []byte) {
	defer func() {
		if recover() != nil {
			out = ad.Render(Event{}, Response{})
		}
	}()
	return ad.Render(ev, r)
}

// errTooLarge is a payload over MaxPayload; readPayload returns its start.
var errTooLarge = errors.New("payload too large to read")

// oversized recovers what an agent's event is from a payload too large or
// too deeply nested to decode: the top-level string fields before the point
// it breaks off (Claude Code sends the event name and cwd before
// tool_input). Nested values are stepped over token by token, so no depth
// stops it.
func oversized(ad Adapter, prefix []byte) Event {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	fields := map[string]string{}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Event{}
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			break
		}
		t, err = dec.Token()
		if err != nil {
			break
		}
		if str, ok := t.(string); ok {
			fields[key] = str
		}
		if t == json.Delim('{') || t == json.Delim('[') {
			if skipNested(dec) != nil {
				break
			}
		}
	}
	small, err := json.Marshal(fields)
	if err != nil {
		return Event{}
	}
	ev, err := ad.Parse(small)
	if err != nil {
		return Event{}
	}
	return ev
}

// skipNested reads the rest of an object or array whose opening token dec
// just returned, at any depth.
func skipNested(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// errUnended is a payload whose end did not come within stdinWait and
// that is not one whole JSON value; readPayload returns what arrived.
var errUnended = errors.New("payload did not end")

// readPayload reads stdin up to MaxPayload, giving up after stdinWait.
func readPayload(r io.Reader) ([]byte, error) {
	data, err := readBounded(r)
	if errors.Is(err, errUnended) {
		return data, err
	}
	if err != nil {
		return nil, err
	}
	if len(data) > MaxPayload {
		return data[:MaxPayload], fmt.Errorf("%w: over %d bytes", errTooLarge, MaxPayload)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty payload")
	}
	return data, nil
}

// readBounded reads r to its end (at most MaxPayload+1 bytes) within
// stdinWait. Agents hand hooks their payload on a pipe, and any file
// descriptor is read by readFile on the hook's own thread. Anything else (a
// Go reader in tests) is read by a goroutine raced against a timer, which
// costs a blocked thread and the wake-ups between them.
func readBounded(r io.Reader) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if data, err, ok := readFile(f); ok {
			return data, err
		}
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := readEvent(r)
		done <- result{data, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, fmt.Errorf("read stdin: %w", res.err)
		}
		return res.data, nil
	case <-time.After(stdinWait):
		return nil, fmt.Errorf("no complete payload on stdin after %s", stdinWait)
	}
}

// readEvent reads r to its end, at most MaxPayload+1 bytes, or until what
// it has read is one whole JSON object: an agent that writes its event and
// leaves stdin open gets its answer at once, not after stdinWait (and not
// the empty answer that lets every call through). The object is checked
// only when a read ends in its closing brace, so a payload arriving in
// pieces is not parsed again at each.
func readEvent(r io.Reader) ([]byte, error) {
	b := make([]byte, 0, 4096)
	var end objectEnd
	for {
		if len(b) == cap(b) {
			// Doubled: append's growth for a large slice is a quarter,
			// which for a 100 KiB payload allocated (and faulted in)
			// several times its size on the way.
			nb := make([]byte, len(b), min(2*cap(b), MaxPayload+1))
			copy(nb, b)
			b = nb
		}
		room := cap(b) - len(b)
		n, err := r.Read(b[len(b) : len(b)+room])
		whole := end.scan(b[len(b) : len(b)+n])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) > MaxPayload, whole:
			return b, nil
		}
	}
}

// objectEnd follows a JSON text as it arrives, one pass over each byte:
// its nesting and its strings, to tell when the outermost object or array
// has closed - the payload is whole - without parsing it again at every
// read (the decoder validates it once, after).
type objectEnd struct {
	depth            int
	inString, escape bool
	opened           bool
}

// scan reads the next bytes and reports whether the outermost value
// closed in them.
func (o *objectEnd) scan(p []byte) bool {
	for _, c := range p {
		switch {
		case o.inString:
			switch {
			case o.escape:
				o.escape = false
			case c == '\\':
				o.escape = true
			case c == '"':
				o.inString = false
			}
		case c == '"':
			o.inString = true
		case c == '{' || c == '[':
			o.depth++
			o.opened = true
		case c == '}' || c == ']':
			o.depth--
			if o.opened && o.depth == 0 {
				return true
			}
		}
	}
	return false
}

// readFile reads f (a pipe, a file, a terminal, a socket) to its end within
// stdinWait, reporting ok=false when its descriptor cannot be had, having
// read nothing. poll(2) says when the descriptor has something to read (or
// is at its end), so a read never blocks past the wait, and the hook needs
// neither the runtime's network poller (an epoll instance, an eventfd and a
// thread parked in epoll_wait, set up on every call) nor a timer nor a
// second thread - the start-up a hook pays on each tool call. The
// descriptor is not changed: its blocking mode is whatever the agent gave
// it (a non-blocking one's EAGAIN is polled again).
func readFile(f *os.File) (data []byte, err error, ok bool) {
	rc, cerr := f.SyscallConn()
	if cerr != nil {
		return nil, nil, false
	}
	cerr = rc.Control(func(fd uintptr) {
		pr := pollReader{int(fd), time.Now().Add(stdinWait)}
		data, err = readEvent(pr)
	})
	switch {
	case cerr != nil:
		return nil, nil, false
	case errors.Is(err, errNoPayload) && len(bytes.TrimSpace(data)) > 0:
		// Say what came: a payload whose end did not, not no payload.
		return data, fmt.Errorf("%w: %d bytes arrived on stdin but not their end within %s", errUnended, len(data), stdinWait), true
	case errors.Is(err, errNoPayload):
		return nil, fmt.Errorf("no payload on stdin after %s", stdinWait), true
	case err != nil:
		return nil, fmt.Errorf("read stdin: %w", err), true
	}
	return data, nil, true
}

// pollReader reads a descriptor once poll(2) says it has something to
// read, giving up at the deadline with errNoPayload.
type pollReader struct {
	fd       int
	deadline time.Time
}

var errNoPayload = errors.New("no payload")

func (p pollReader) Read(b []byte) (int, error) {
	for {
		wait := time.Until(p.deadline)
		if wait <= 0 {
			return 0, errNoPayload
		}
		pfd := unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN}
		e := pollWait(&pfd, wait)
		if e == unix.EINTR || (e == 0 && pfd.Revents == 0) {
			continue // interrupted, or the time is up: checked above
		}
		if e != 0 {
			return 0, e
		}
		n, err := unix.Read(p.fd, b)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// handle is the agent-independent core.
func handle(ctx context.Context, ev Event, root string, opts Options) Response {
	switch ev.Kind {
	case KindPreTool:
		if skillTools[ev.ToolName] || agentTools[ev.ToolName] {
			return guardSkill(ev, root, opts)
		}
		if ev.Shell {
			session.MarkGuardSeen()
		}
		// The files a patch names: codex's apply_patch tool's, or one
		// given to its shell, in the directory the tool runs in.
		if ev.PatchUnplaced {
			if _, on := guardSession(root, opts); on {
				return Response{Decision: guard.Deny, Reason: "wiggum: apply_patch: cannot tell which directory this patch applies in, so its files cannot be checked; use the apply_patch tool, or run `apply_patch` alone or after a single `cd DIR &&`"}
			}
		}
		for _, p := range ev.Paths {
			one := ev
			one.Cwd, one.FilePath = ev.workDir(), p
			if r := guardEdit(one, root, opts); r.Decision != guard.Allow {
				return r
			}
		}
		if ev.Shell && ev.Command != "" {
			if ev.InBackground {
				if r := backgroundTests(ev, root, opts); r.Decision != guard.Allow {
					return r
				}
			}
			return guardCommand(ev, root, opts)
		}
		if editTools[ev.ToolName] && ev.FilePath != "" {
			if r := guardEdit(ev, root, opts); r.Decision != guard.Allow {
				return r
			}
			if opts.RequireRead {
				return requireRead(ev, root, opts)
			}
		}
	case KindPostTool, KindPostFailure:
		// Only a Read that succeeded read the file; a successful write or
		// edit makes the file's content known as a read does: an edit
		// after the agent's own Write was denied as "not read first", the
		// client having told the model not to read it back.
		if opts.RequireRead && ev.Kind == KindPostTool && ev.FilePath != "" && (readTools[ev.ToolName] || editTools[ev.ToolName]) {
			noteRead(ev, root, opts)
		}
		if ev.Shell && ev.Command != "" {
			told := takeNotice(ev, root) // subagent.go
			if ev.Background != "" {
				noteBackground(ev, root, opts)
				return Response{Context: told}
			}
			r := testRun(ctx, ev, root, opts)
			r.Context = strings.TrimSpace(told + "\n\n" + r.Context)
			return r
		}
	case KindTaskDone:
		return tasksDone(ctx, ev, root, opts)
	case KindStop:
		stop(ctx, ev, root, opts)
		if ev.Name == "Stop" && !ev.StopHookActive {
			if told := takeNotice(ev, root); told != "" {
				return Response{Decision: guard.Deny, Reason: told}
			}
		}
	case KindReset:
		if root != "" && ev.SessionID != "" {
			for _, path := range readLogPaths(root, ev.SessionID) {
				_ = os.Remove(path)
			}
		}
	default:
		debugLog(root, opts, "%s hook: event %q ignored", ev.Agent, ev.Name)
	}
	return Response{}
}

func guardCommand(ev Event, root string, opts Options) Response {
	sess, on := guardSession(root, opts)
	if !on {
		return Response{}
	}
	// The tool's own directory places the command: the scripts it runs
	// by path and the files it names are there.
	p := guardPolicy(ev.workDir(), root)
	p.Allow = opts.Allow
	p.Home, _ = os.UserHomeDir()
	if sess.Active {
		p.Preexisting = changedBefore(sess.Started)
	}
	p.NoSession = !sess.Active
	p.Supervisor, p.SupervisorArgs = sess.PID, sess.Command
	if root != "" {
		var def string
		p.Branch, def = branches(root)
		p.ProtectedBranches = guard.ProtectedBranches(def)
		p.BranchExists = func(name string) bool { return branchExists(root, name) }
	}
	d := guard.Check(ev.Command, p)
	if d.Action != guard.Allow {
		debugLog(root, opts, "guard: %s %q: %s", d.Action, ev.Command, d.Reason)
		if err := recordDenial(ev, root, d); err != nil {
			// The decision stands: only its record is lost.
			debugLog(root, opts, "guard: the %s of %q still stands, but it is not in the event log: %v", d.Action, oneLine(ev.Command), err)
		}
	}
	return Response{Decision: d.Action, Reason: "wiggum: " + d.Reason}
}

// wiggumRefs holds every ref checkpoint writes (checkpoints and
// checkpoint.BackupPrefix).
const wiggumRefs = "refs/wiggum/"

// guardPolicy is what the guard protects in the working tree at root:
// wiggum's runtime state, its git hooks and its refs.
func guardPolicy(cwd, root string) guard.Policy {
	// The home directory: the rules for the person's own git config and
	// for deleting the home directory need it (one environment read).
	home, _ := os.UserHomeDir()
	p := guard.Policy{
		Cwd: cwd, Root: root, Home: home,
		StatePaths:   layout.StatePaths(),
		RefNamespace: wiggumRefs,
		ReadFile:     readScript,
		ReadDir:      readDirs,
	}
	for _, name := range GitHooks {
		p.HookFiles = append(p.HookFiles, ".git/hooks/"+name)
	}
	return p
}

// changedBefore reports whether a file's inode last changed before t. The
// change time, unlike the modification time, cannot be set back by
// `touch -d`: a script the agent wrote or edited during the session is
// never taken for the project's own.
func changedBefore(t time.Time) func(path string) bool {
	return func(path string) bool {
		c, ok := changeTime(path)
		return ok && c.Before(t)
	}
}

// readDirs lists the directories in dir, for the guard's workspace
// patterns (at most a few hundred names are read). dir is opened without
// blocking and only as a directory: a FIFO named like a workspace
// directory must not hang the hook (a timed-out PreToolUse hook does not
// block the command).
func readDirs(dir string) ([]string, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(512)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if err != nil && err != io.EOF {
		return out, err
	}
	return out, nil
}

// readScript reads a script file a guarded command runs: a regular file
// (symlinks followed, their loops ended by the kernel), at most
// guard.MaxScript+1 bytes, only the first KiB of a compiled program. A
// directory or device is refused unread, and the file is opened without
// blocking, so a FIFO swapped in cannot hang the hook.
func readScript(path string) ([]byte, error) {
	f, err := statefile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A compiled program shows a NUL in its first KiB, all the guard needs
	// to see to leave it be: the rest is not read.
	head := make([]byte, 1024)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if head = head[:n]; n < len(head) || bytes.IndexByte(head, 0) >= 0 {
		return head, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, guard.MaxScript+1-int64(n)))
	return append(head, rest...), err
}

// runEvent records an event in the run's event log: the one the agent's
// environment names (a parallel worker's hooks run in its worktree, whose
// own log goes with it), else st's.
func runEvent(st *checkpoint.State, name string, fields map[string]any) error {
	if path := session.EventLogFromEnv(); path != "" {
		return session.AppendEventAt(path, name, fields)
	}
	return session.AppendEvent(st, name, fields)
}

// recordDenial logs a denied (or held for asking) command in the run's
// event log, where wiggum run's notifications and report find it: the log
// named by the agent's environment, else the repository's own when wiggum
// has a runtime directory there. It never creates one.
func recordDenial(ev Event, root string, d guard.Decision) error {
	path := session.EventLogFromEnv()
	if path == "" && root != "" {
		dir := filepath.Join(root, layout.RuntimeDir)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil
		}
		path = filepath.Join(dir, layout.EventFile)
	}
	if path == "" {
		return nil
	}
	return session.AppendEventAt(path, "guard_denied", map[string]any{
		"agent": ev.Agent, "decision": d.Action.String(), "command": oneLine(ev.Command),
		"reason": d.Reason, "story": os.Getenv("WIGGUM_STORY"),
	})
}

// guardOn reports whether the guard applies to this call.
func guardOn(root string, opts Options) bool {
	switch opts.Guard {
	case GuardOff:
		return false
	case GuardAlways:
		return true
	}
	return sessionAt(root).Active
}

// guardSession says whether the guard applies to this call, with the live
// session it read deciding that (zero when there is none), so a caller
// that also needs the session reads the holder record and probes the lock
// once.
func guardSession(root string, opts Options) (layout.SessionInfo, bool) {
	if opts.Guard == GuardOff {
		return layout.SessionInfo{}, false
	}
	s := sessionAt(root)
	return s, s.Active || opts.Guard == GuardAlways
}

// guardEdit denies file tools writing into wiggum's state, the same rule
// the shell guard applies to rm, mv and redirections.
func guardEdit(ev Event, root string, opts Options) Response {
	sess, on := guardSession(root, opts)
	if !on {
		return Response{}
	}
	p := guardPolicy(ev.Cwd, root)
	if sess.Active {
		p.Preexisting = changedBefore(sess.Started)
	}
	p.NoSession = !sess.Active
	d := guard.CheckEdit(ev.FilePath, p)
	if d.Action == guard.Allow {
		return Response{}
	}
	return Response{Decision: d.Action, Reason: "wiggum: " + ev.ToolName + ": " + d.Reason}
}

// testRun handles the end of a shell command: a failing test run is logged
// for the loop's retry prompt and, inside a session whose policy is
// rollback, rolled back.
func testRun(ctx context.Context, ev Event, root string, opts Options) Response {
	runner, dir, known := testRunIn(ev.Command)
	if runner == "" {
		return Response{}
	}
	if Classify(ev.Output, ev.ExitCode) != Failed {
		// Output with no failing summary (a compile error, a crash, a
		// reporter wiggum does not know) fails by its exit status,
		// which Codex keeps in its transcript: read only here, for a
		// test run the output did not settle.
		if ev.ExitCode >= 0 || ev.Transcript == "" || transcriptExit(ev.Transcript, ev.CallID) <= 0 {
			return Response{}
		}
	}
	if root == "" {
		return Response{}
	}
	sess := sessionAt(root)
	if !sess.Mine {
		return failedOutside(ev, root, runner, sess.Elsewhere, opts)
	}
	if where := testDir(ev, dir); known && !layout.Within(root, where) && !layout.Within(where, root) {
		// cd /other/lib && npm test, go -C /other/lib test: another
		// project's tests say nothing about this tree's work, which a
		// rollback would throw away each time the agent ran them. The
		// failure is recorded for the next attempt all the same. A run
		// in a directory holding the tree (cd .. && go test ./proj/...)
		// may be of the tree's tests: it is judged as one in it.
		return failedElsewhere(ctx, ev, root, runner, where, opts)
	}
	st, err := checkpoint.Open(ctx, root)
	if err != nil {
		debugLog(root, opts, "test failure: open state: %v", err)
		return Response{}
	}
	if !firstForCall(st, ev) {
		return Response{}
	}
	run, err := session.ReadRun(st)
	if err != nil {
		debugLog(root, opts, "test failure: %v", err)
		run = nil
	}
	f := session.Failure{Source: "test-hook", Command: ev.Command, Output: Tail(ev.Output, 80, 8<<10)}
	if run != nil {
		f.Story, f.Iteration = run.Story, run.Iteration
	}
	msg := fmt.Sprintf("wiggum: tests failed (%s).", runner)
	switch {
	case run != nil && run.Policy == session.PolicyRecord:
		f.Rollback = "not attempted: the session's policy is record"
		msg += " The failure was recorded for the next attempt; fix the code and run the tests again."
	default:
		// The failure is on record before the tree moves: a hook killed
		// mid-rollback (the agent's hook timeout, the OOM killer) leaves
		// it for the loop, which then fails the attempt and rolls back
		// itself, instead of committing a torn tree.
		f.Rollback = "cut off: the hook was stopped before its rollback finished"
		if done, err := session.BeginHookRollback(st, f); err != nil {
			debugLog(root, opts, "record the rollback: %v", err)
		} else {
			defer done()
		}
		killpoint.At("hook-rollback-recorded")
		res, err := rollback(ctx, st, sess.Session, "tests failed: "+oneLine(ev.Command))
		var refused *checkpoint.RefusedError
		switch {
		case errors.As(err, &refused):
			f.Rollback = "refused: " + refused.Reason
			msg += " wiggum did not roll back (" + refused.Reason + "); nothing was changed. Fix the failure from here."
		case err != nil:
			f.Rollback = "failed: " + err.Error()
			msg += " Rolling back failed: " + err.Error()
			debugLog(root, opts, "rollback: %v", err)
		case res.NothingToDo:
			f.Rollback = "nothing to do: already at the checkpoint"
			msg += " The working tree is already at the checkpoint; nothing was rolled back."
			for _, dir := range res.Repositories {
				msg += " " + checkpoint.RepositoryLeft(dir) + "."
			}
		default:
			cp := ""
			if res.Checkpoint != nil {
				cp = shortSHA(res.Checkpoint.Head)
			}
			saved := res.BackupRef
			if saved == "" {
				saved = "the submodules' own backups"
			}
			f.Rollback = fmt.Sprintf("rolled back to %s; attempt saved in %s", cp, saved)
			msg += fmt.Sprintf(" The working tree was rolled back to checkpoint %s; your attempt is saved in %s (see `wiggum recover`).", cp, saved)
			for _, sub := range res.Submodules {
				msg += " The " + sub.String() + "."
			}
			for _, dir := range res.Repositories {
				msg += " " + checkpoint.RepositoryLeft(dir) + "."
			}
			msg += " Start again from the checkpoint with a different approach."
			if ev.AgentID != "" {
				// A subagent's: its answer reaches only the subagent,
				// and the rollback undid the main conversation's work
				// too (subagent.go).
				leaveNotice(ev, root, runner, cp, saved)
			}
		}
	}
	if err := session.AppendFailure(st, f); err != nil {
		debugLog(root, opts, "append failure: %v", err)
	}
	_ = runEvent(st, "test-failure", map[string]any{"agent": ev.Agent, "runner": runner, "rollback": f.Rollback, "story": f.Story})
	return Response{Context: msg}
}

// firstForCall reports whether this is the first of wiggum's hooks to
// take on the failing test run of the tool call ev (its tool_use_id). An
// agent runs every hook entry registered for an event: wiggum's installed
// at user level and project level with different flags (Claude Code
// de-duplicates identical commands only) both see the call, and the
// second rolled back "nothing" after the first, recorded the failure
// twice and sent the model a second, contradicting message. The first
// makes an empty file named after the call (O_EXCL: one wins however
// they race); a later one finds it and leaves the call to it. A call with
// no id, or one that is no plain name, is always taken on.
func firstForCall(st *checkpoint.State, ev Event) bool {
	id := ev.ToolUseID
	if id == "" || len(id) > 128 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return true
	}
	dir, err := st.Runtime(layout.HookCallsDir)
	if err != nil || os.MkdirAll(dir, 0o755) != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false
	}
	if err == nil {
		f.Close()
	}
	return true
}

// testDir is the absolute directory a test run is in: dir (from
// testRunIn) from the shell tool's own directory, else the payload's cwd.
func testDir(ev Event, dir string) string {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(ev.workDir(), dir)
}

// workDir is the absolute directory the tool runs in: the one it names
// (Dir), or the session's.
func (ev Event) workDir() string {
	switch {
	case ev.Dir == "":
		return ev.Cwd
	case filepath.IsAbs(ev.Dir):
		return ev.Dir
	}
	return filepath.Join(ev.Cwd, ev.Dir)
}

// failedElsewhere records, in the session, a failing test run that ran
// outside its working tree, and rolls nothing back.
func failedElsewhere(ctx context.Context, ev Event, root, runner, where string, opts Options) Response {
	why := fmt.Sprintf("the tests ran in %s, outside the working tree %s", where, root)
	msg := fmt.Sprintf("wiggum: tests failed (%s). Nothing was rolled back: %s. The failure was recorded.", runner, why)
	st, err := checkpoint.Open(ctx, root)
	if err != nil {
		debugLog(root, opts, "test failure: open state: %v", err)
		return Response{Context: msg}
	}
	if !firstForCall(st, ev) {
		return Response{}
	}
	f := session.Failure{Source: "test-hook", Command: ev.Command, Output: Tail(ev.Output, 80, 8<<10), Rollback: "not attempted: " + why}
	if run, err := session.ReadRun(st); err == nil && run != nil {
		f.Story, f.Iteration = run.Story, run.Iteration
	}
	if err := session.AppendFailure(st, f); err != nil {
		debugLog(root, opts, "append failure: %v", err)
	}
	_ = runEvent(st, "test-failure", map[string]any{"agent": ev.Agent, "runner": runner, "rollback": f.Rollback, "story": f.Story})
	return Response{Context: msg}
}

// failedOutside records a failing test run seen outside any wiggum
// session, where nothing is rolled back, at the cost of a hook that only
// reads its payload: no git process, one appended line in the failure log
// and one in the event log, no fsync, no temporary file - where wiggum has
// run before (a .ralph directory); elsewhere it only answers.
//
// elsewhere: the process is the session's, working in another worktree of
// its repository (sessionAt), which holds no checkpoint of the session's.
func failedOutside(ev Event, root, runner string, elsewhere bool, opts Options) Response {
	why, says := "outside a wiggum session", "outside a wiggum session nothing is rolled back"
	if elsewhere {
		why = "this worktree is not the one the wiggum session checked out"
		says = why + ", so nothing is rolled back here"
	}
	t := layout.At(root)
	// A working tree wiggum never ran in (agent hooks installed for the
	// user, in every project) gets no .ralph of wiggum's: nothing there
	// would ever read the record.
	if !t.Used() {
		return Response{Context: fmt.Sprintf("wiggum: tests failed (%s); %s.", runner, says)}
	}
	f := session.Failure{Source: "test-hook", Command: ev.Command, Output: Tail(ev.Output, 80, 8<<10),
		Rollback: "not attempted: " + why}
	// The runtime directory is made invisible to git before anything is
	// created in it, as checkpoint.Open would, from the files alone.
	if info := infoDir(root); info != "" {
		if err := layout.EnsureExcluded(info); err != nil {
			debugLog(root, opts, "test failure: %v", err)
			return Response{}
		}
	}
	path, err := t.Runtime(layout.FailureFile)
	if err == nil {
		err = session.AppendFailureAt(path, f)
	}
	if err != nil {
		debugLog(root, opts, "append failure: %v", err)
	}
	_ = session.AppendEventAt(t.RuntimePath(layout.EventFile), "test-failure", map[string]any{"agent": ev.Agent, "runner": runner, "rollback": f.Rollback})
	return Response{Context: fmt.Sprintf("wiggum: tests failed (%s). The failure was recorded; %s.", runner, says)}
}

// rollbackLockWait bounds a test hook's wait for another's rollback
// (well inside the 120 s the hook is given).
var rollbackLockWait = 60 * time.Second

// rollback runs one rollback at a time: an agent runs tool calls in
// parallel, and two failing test runs must not roll the same tree back at
// once (the second finds it already at the checkpoint). The wait for the
// other is bounded: the agent can hold the lock itself (flock
// .ralph/wiggum/hook-rollback.lock sleep 600 &), and a hook killed at its
// timeout recorded nothing, so the run committed the failing work as
// done. Past the wait the rollback fails, and the failure recorded as
// such fails the attempt.
func rollback(ctx context.Context, st *checkpoint.State, sess, reason string) (*checkpoint.RollbackResult, error) {
	path, err := st.Runtime("hook-rollback")
	if err != nil {
		return nil, err
	}
	var res *checkpoint.RollbackResult
	err = statefile.WithLockWait(path, rollbackLockWait, func() error {
		var rerr error
		res, rerr = st.Rollback(ctx, checkpoint.RollbackOptions{Session: sess, Reason: reason})
		return rerr
	})
	return res, err
}

// stop records, for the loop, that the agent stopped inside a session
// ("agent-stop"), with whether the run's story is ticked in the plan. It
// never blocks the stop: the loop decides what happens next, and an agent
// kept alive by a Stop hook (stop_hook_active) must be let go.
func stop(ctx context.Context, ev Event, root string, opts Options) {
	sess := layout.At(root).Session()
	if !sess.Mine {
		return
	}
	st, err := checkpoint.Open(ctx, root)
	if err != nil {
		debugLog(root, opts, "stop: open state: %v", err)
		return
	}
	fields := map[string]any{"agent": ev.Agent, "stop_hook_active": ev.StopHookActive}
	if run, err := session.ReadRun(st); err == nil && run != nil && run.Story != "" {
		fields["story"], fields["iteration"] = run.Story, run.Iteration
		// Not "story-incomplete" when it is open: the run record is
		// wiggum run's, whose loop ticks the story itself once the agent
		// has ended, so every story was shown incomplete a moment before
		// it was done.
		done, err := storyDone(root, run)
		if err != nil {
			debugLog(root, opts, "stop: read the plan: %v", err)
		}
		fields["done"] = done
	}
	if err := runEvent(st, "agent-stop", fields); err != nil {
		debugLog(root, opts, "stop: %v", err)
	}
}

// storyDone reads the run's plan and reports whether its story is ticked.
func storyDone(root string, run *session.Run) (bool, error) {
	if run.Plan == "" {
		return false, errors.New("the run record names no plan")
	}
	path := run.Plan
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	src := plan.Source{File: path}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		src = plan.Source{Issues: path}
	}
	p, err := plan.Resolve(root, root, src)
	if err != nil {
		return false, err
	}
	stories, err := p.Stories()
	if err != nil {
		return false, err
	}
	for _, s := range stories {
		if s.ID == run.Story {
			return s.Done, nil
		}
	}
	return false, fmt.Errorf("story %s is not in %s", run.Story, run.Plan)
}

// readLogPaths are where a conversation's reads are noted (the first)
// and looked up: the runtime directory where wiggum has run, else the
// repository's git directory - an ordinary Read with --require-read
// installed for the user once made .ralph/wiggum/reads/ in every
// repository, shown by git status and swept up by git add -A. The other
// is looked up too: wiggum may start in the tree mid-conversation.
func readLogPaths(root, conversation string) []string {
	runtime := filepath.Join(root, filepath.FromSlash(layout.RuntimeDir), layout.ReadsDir, fileName(conversation))
	gitDir, _ := gitfiles.Dirs(root)
	if gitDir == "" {
		return []string{runtime}
	}
	private := filepath.Join(gitDir, "wiggum", layout.ReadsDir, fileName(conversation))
	if layout.At(root).Used() {
		return []string{runtime, private}
	}
	return []string{private, runtime}
}

// fileName makes an agent's id (a conversation's, a task's) a file name.
func fileName(id string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
	if len(name) > 100 {
		name = name[:100]
	}
	return name
}

func absPath(ev Event) string {
	if filepath.IsAbs(ev.FilePath) {
		return filepath.Clean(ev.FilePath)
	}
	return filepath.Join(ev.Cwd, ev.FilePath)
}

func noteRead(ev Event, root string, opts Options) {
	if root == "" || ev.SessionID == "" {
		return
	}
	path := readLogPaths(root, ev.SessionID)[0]
	if strings.HasPrefix(path, filepath.Join(root, filepath.FromSlash(layout.RuntimeDir))) {
		// Made invisible to git before anything is created in it.
		if info := infoDir(root); info != "" {
			if err := layout.EnsureExcluded(info); err != nil {
				debugLog(root, opts, "read log: %v", err)
				return
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		debugLog(root, opts, "read log: %v", err)
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		debugLog(root, opts, "read log: %v", err)
		return
	}
	defer f.Close()
	// One JSON string a line, so a path holding a newline stays one
	// entry (a Read of "nope\n/abs/target" marked /abs/target read), and
	// one write a line: concurrent hooks append whole lines.
	line, err := json.Marshal(absPath(ev))
	if err != nil {
		return
	}
	_, _ = f.Write(append(line, '\n'))
}

func requireRead(ev Event, root string, opts Options) Response {
	target := absPath(ev)
	if _, err := os.Stat(target); err != nil {
		return Response{} // a new file has nothing to read first
	}
	if root != "" && ev.SessionID != "" {
		for _, path := range readLogPaths(root, ev.SessionID) {
			data, _ := statefile.ReadFile(path)
			for line := range strings.Lines(string(data)) {
				var p string
				if json.Unmarshal([]byte(line), &p) == nil && p == target {
					return Response{}
				}
			}
		}
	}
	return Response{Decision: guard.Deny, Reason: fmt.Sprintf("wiggum: read %s before changing it (this session requires reading a file first, so edits are made against its current content)", ev.FilePath)}
}

// debugLog appends a line to .ralph/wiggum/hook-debug.log (or stderr with
// -v). The log is rotated at 1 MiB so a busy agent cannot fill the disk.
func debugLog(root string, opts Options, format string, args ...any) {
	line := time.Now().UTC().Format(time.RFC3339) + " " + fmt.Sprintf(format, args...) + "\n"
	if opts.Verbose != nil {
		_, _ = io.WriteString(opts.Verbose, line)
	}
	if root == "" {
		return
	}
	dir := filepath.Join(root, filepath.FromSlash(layout.RuntimeDir))
	if !layout.At(root).Used() {
		return // never create state in a repository wiggum does not manage
	}
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	path := filepath.Join(dir, "hook-debug.log")
	if fi, err := os.Stat(path); err == nil && fi.Size() > 1<<20 {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
