package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// The commit journal - wiggum's post-commit hook recording each commit and
// the session that made it - is what lets a failed attempt's rollback
// discard the agent's commits: a commit it does not list is nobody's
// provable own, and the rollback is refused. Two ways of committing run no
// post-commit hook: a git whose hooks are turned off (Gemini CLI's shell
// empties core.hooksPath through GIT_CONFIG_*; `git -c core.hooksPath=...`)
// and `git merge` (git runs post-merge there, never post-commit). An
// agent's commit made either way stopped the run at the first failed
// attempt (exit 4). As a session's git, the shim runs such a command as
// its child and journals what it committed on HEAD's branch: the commits
// between HEAD before and after (commit, cherry-pick, revert, am), or the
// merge commit it made (merge). Any other command - and these when the
// hooks run or no session holds the tree - is git exec'd as before.

// journaledCommand reports whether git's command sub makes commits on
// HEAD's branch that the post-commit hook would journal (merge: that it
// never journals).
func journaledCommand(sub string) bool {
	switch sub {
	case "commit", "cherry-pick", "revert", "am", "merge":
		return true
	}
	return false
}

// commitJournaled runs git ARGS (command args[sub]) in dir as a child and
// journals its commits, when it needs to: the session's journal is on and
// git will not run wiggum's post-commit hook. ran is false when it did not
// run git (then exec it).
func commitJournaled(dir string, args []string, sub int, inline []string, real string, stderr io.Writer) (code int, ran bool) {
	if os.Getenv(layout.SessionEnv) == "" {
		return 0, false
	}
	merge := args[sub] == "merge"
	if !merge && !hooksOff(dir, inline) {
		return 0, false
	}
	// Where the repository keeps its hooks, and so whether the journal is
	// on, is read without the settings that move them for this git; the
	// git run below gets its environment as it was.
	env := os.Environ()
	moved := map[string]string{}
	for _, k := range []string{"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"} {
		if v, ok := os.LookupEnv(k); ok {
			moved[k] = v
			_ = os.Unsetenv(k)
		}
	}
	defer func() {
		for k, v := range moved {
			_ = os.Setenv(k, v)
		}
	}()
	ctx := context.Background()
	st, err := checkpoint.Open(ctx, dir)
	if err != nil || !st.JournalOn() {
		return 0, false
	}
	before, err := st.Repo.Head(ctx)
	if err != nil {
		return 0, false
	}
	cmd := exec.Command(real, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "wiggum: run %s: %v\n", real, err)
		return 126, true
	}
	// A signal for the shim is git's: it decides how to stop, and the shim
	// journals what it made before it did.
	sigs := make(chan os.Signal, 4)
	ossignal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	ossignal.Stop(sigs)
	code = exitCode(err)
	after, herr := st.Repo.Head(ctx)
	if herr != nil || after == "" || after == before {
		return code, true
	}
	var made []string
	if merge {
		// The merge commit, when it made one on top of HEAD: not the
		// commits it brought in, which are other work's.
		parents, err := st.Repo.Line(ctx, "rev-list", "--parents", "-n", "1", after)
		if f := strings.Fields(parents); err == nil && len(f) > 2 && f[1] == before {
			made = []string{after}
		}
	} else {
		revs := after
		if before != "" {
			revs = before + ".." + after
		}
		out, err := st.Repo.Run(ctx, "rev-list", "--reverse", revs)
		if err == nil {
			made = strings.Fields(out)
		}
	}
	if err := st.RecordCommits(ctx, made); err != nil {
		fmt.Fprintf(stderr, "wiggum: journal the commits git made: %v\n", err)
	}
	return code, true
}

// exitCode is the exit code a shell would report for a child that ended
// with err.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 126
	}
	return 0
}

// hooksOff reports whether this git's configuration from its command line
// (-c) or environment (GIT_CONFIG_COUNT/KEY/VALUE, GIT_CONFIG_PARAMETERS)
// sends core.hooksPath where wiggum's post-commit hook is not: then git
// will not journal the commit itself. (A relative path is taken from dir,
// where git runs; git takes it from the top of the tree - at worst a
// commit journaled twice.)
func hooksOff(dir string, inline []string) bool {
	off := false
	see := func(value string) {
		if value != "" && !filepath.IsAbs(value) {
			value = filepath.Join(dir, value)
		}
		data, err := statefile.ReadFile(filepath.Join(value, "post-commit"))
		off = value == "" || err != nil || !bytes.Contains(data, []byte(checkpoint.GitHookMarker))
	}
	if n, err := strconv.Atoi(os.Getenv("GIT_CONFIG_COUNT")); err == nil {
		for i := 0; i < n; i++ {
			if strings.EqualFold(os.Getenv("GIT_CONFIG_KEY_"+strconv.Itoa(i)), "core.hooksPath") {
				see(os.Getenv("GIT_CONFIG_VALUE_" + strconv.Itoa(i)))
			}
		}
	}
	if strings.Contains(strings.ToLower(os.Getenv("GIT_CONFIG_PARAMETERS")), "core.hookspath") {
		off = true
	}
	for _, kv := range inline {
		if k, v, _ := strings.Cut(kv, "="); strings.EqualFold(k, "core.hooksPath") {
			see(v)
		}
	}
	return off
}
