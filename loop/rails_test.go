package loop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// An attempt that breaks wiggum's hooks - deletes a git hook shim, rewrites
// the agent's hook settings - fails even though its agent exited 0: it is
// rolled back (the settings file with it), the git hook is put back (no
// rollback would: it is not in the tree), and the retry goes on guarded.
// What a rollback cannot undo, core.hooksPath, stops the run.
func TestAttemptThatBreaksTheHooksFails(t *testing.T) {
	const settings = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "wiggum hook claude"}]}]}}` + "\n"
	for _, tc := range []struct {
		name, breaks, want string
		claude, stops      bool
	}{
		{name: "git hook deleted", breaks: `rm -f "$HOOKS/pre-push"`, want: "removed or changed wiggum's git hook(s) pre-push"},
		{name: "settings rewritten", breaks: `echo '{}' > .claude/settings.json`, want: "removed or changed wiggum's hooks in", claude: true},
		{name: "hooks turned off", breaks: `sed -i 's/{"hooks"/{"disableAllHooks": true, "hooks"/' .claude/settings.json`, want: "turned the agent's hooks off", claude: true},
		{name: "hooksPath", breaks: `git config core.hooksPath /dev/null`, want: "core.hooksPath", stops: true},
		{name: "session files deleted", breaks: `rm -f .ralph/.agent-lock .ralph/.agent-lock.json`, want: "deleted or replaced the agent lock file .ralph/.agent-lock and the holder record .ralph/.agent-lock.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			st, p := newRepo(t, 1)
			root := st.Repo.Root
			if _, err := install.InstallGit(context.Background(), st.Repo, false); err != nil {
				t.Fatal(err)
			}
			shim, _ := os.ReadFile(filepath.Join(st.Repo.HooksDir, "pre-push"))
			if err := os.MkdirAll(filepath.Join(root, ".claude"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
				t.Fatal(err)
			}
			gitT(t, root, "add", "-A")
			gitT(t, root, "commit", "-q", "-m", "hooks")
			marker := filepath.Join(t.TempDir(), "broke")
			o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"
if [ ! -e "`+marker+`" ]; then touch "`+marker+`"; HOOKS="`+st.Repo.HooksDir+`"; `+tc.breaks+`; fi`)
			if tc.claude {
				o.Agent.Name, o.VerifyHooks = "claude", true
			}
			var out bytes.Buffer
			o.Out = &out
			sum, err := Run(context.Background(), st, o)
			if tc.stops {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rollback does not undo") {
					t.Fatalf("want the run stopped naming %q, got %v\n%s", tc.want, err, out.String())
				}
				return
			}
			if err != nil || len(sum.Completed) != 1 {
				t.Fatalf("the retry should be done: %v %+v\n%s", err, sum, out.String())
			}
			if !strings.Contains(out.String(), "✘ US-1 failed: the attempt "+tc.want) {
				t.Errorf("the first attempt did not fail naming what it broke (%q):\n%s", tc.want, out.String())
			}
			if got, _ := os.ReadFile(filepath.Join(root, ".claude", "settings.json")); string(got) != settings {
				t.Errorf("the settings are not as before the attempt: %s", got)
			}
			if got, _ := os.ReadFile(filepath.Join(st.Repo.HooksDir, "pre-push")); !bytes.Equal(got, shim) {
				t.Errorf("the pre-push shim was not put back: %q", got)
			}
			if log := gitT(t, root, "log", "--format=%s", "-1"); !strings.Contains(log, "US-1") {
				t.Errorf("the story was not committed by its retry: %s", log)
			}
			// The run ended and let go of every file it locked.
			l, err := layout.At(root).Acquire(context.Background(), layout.AcquireOptions{})
			if err != nil {
				t.Fatalf("the lock is still held after the run: %v", err)
			}
			l.Release()
		})
	}
}
