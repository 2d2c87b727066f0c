package hooks

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/guard"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// A test run the agent starts in the background (Claude Code's Bash with
// run_in_background) answers its PostToolUse at once, with no output and
// no exit status: the command goes on, and Claude Code tells the model of
// its end later, in a prompt of its own (a <task-notification> naming the
// task, its status and the file that holds its output), which runs the
// UserPromptSubmit hook. wiggum notes such a test command when it starts
// and judges it when it ends, as it judges one run in the foreground.

// backgroundDir holds one file a test command running in the background,
// named by the agent's task id, holding the command.
func backgroundDir(root string) string {
	return filepath.Join(root, filepath.FromSlash(layout.RuntimeDir), "background")
}

// backgroundKept is how long a note waits for its task's end: a session
// killed before the end never sends it.
const backgroundKept = 24 * time.Hour

// taskOutputTail bounds what is read of a background command's output:
// a runner's verdict is in its last lines.
const taskOutputTail = 1 << 20

// noteBackground records a test command the agent started in the
// background, where wiggum manages the repository.
func noteBackground(ev Event, root string, opts Options) {
	if root == "" || TestRunner(ev.Command) == "" || !layout.At(root).Used() {
		return
	}
	dir := backgroundDir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		debugLog(root, opts, "background test run: %v", err)
		return
	}
	if old, err := os.ReadDir(dir); err == nil {
		for _, e := range old {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > backgroundKept {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, fileName(ev.Background)), []byte(ev.Command), 0o644); err != nil {
		debugLog(root, opts, "background test run: %v", err)
	}
}

// tasksDone judges the test commands among the background tasks that
// ended: a failed one is handled as testRun handles one in the
// foreground (rolled back in a session, recorded outside one), and what
// wiggum says reaches the model with the notification.
func tasksDone(ctx context.Context, ev Event, root string, opts Options) Response {
	if root == "" {
		return Response{}
	}
	var said []string
	for _, t := range ev.Tasks {
		note := filepath.Join(backgroundDir(root), fileName(t.ID))
		cmd, err := statefile.ReadFile(note)
		if err != nil {
			continue // not a test command wiggum saw start
		}
		_ = os.Remove(note)
		exit := t.ExitCode
		switch t.Status {
		case "completed":
			exit = max(exit, 0)
		case "failed":
			if exit <= 0 {
				exit = 1
			}
		default:
			continue // killed or stopped: no verdict on the tests
		}
		run := ev
		run.Kind, run.Command, run.ExitCode, run.Tasks = KindPostTool, string(cmd), exit, nil
		run.Output = taskOutput(t, root, opts)
		if r := testRun(ctx, run, root, opts); r.Context != "" {
			said = append(said, r.Context)
		}
	}
	return Response{Context: strings.Join(said, "\n")}
}

// taskOutput reads the end of a background task's output: the file the
// notification names, which must be the agent's own for that task
// (<task-id>.output in a tasks directory) and a regular file.
func taskOutput(t Task, root string, opts Options) string {
	path := t.OutputFile
	if !filepath.IsAbs(path) || filepath.Base(path) != t.ID+".output" || filepath.Base(filepath.Dir(path)) != "tasks" {
		debugLog(root, opts, "background test run %s: output file %q is not the task's", t.ID, path)
		return ""
	}
	f, err := statefile.OpenRegular(path)
	if err != nil {
		debugLog(root, opts, "background test run %s: %v", t.ID, err)
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > taskOutputTail {
		if _, err := f.Seek(fi.Size()-taskOutputTail, io.SeekStart); err != nil {
			return ""
		}
	}
	data, _ := io.ReadAll(io.LimitReader(f, taskOutputTail))
	return string(data)
}

// backgroundTests denies, in a session, a test run the agent asks to
// start in the background where nothing tells how it ends (Gemini CLI's
// is_background answers "moved to background" at once, and no later
// event carries the exit status or the output): a failing one went
// unseen, and the attempt was committed with it. In the foreground it is
// judged, and rolled back when it fails.
func backgroundTests(ev Event, root string, opts Options) Response {
	runner := TestRunner(ev.Command)
	if runner == "" {
		return Response{}
	}
	if _, on := guardSession(root, opts); !on {
		return Response{}
	}
	return Response{Decision: guard.Deny, Reason: fmt.Sprintf("wiggum: run the tests (%s) in the foreground, not in the background: how a background command ends reaches no hook, so a failing run would go unseen; run it again without is_background", runner)}
}
