package loop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/agent"
)

// Codex's sandbox makes an empty directory to mount over each missing
// .git, .agents, .codex and .aws in the roots a command may write - the
// tree and the temporary directory - and leaves them when the command is
// killed (openai/codex#31599); an empty /tmp/.git fails go build in every
// checkout under /tmp. After each attempt of the built-in codex agent
// (here a fake codex on PATH doing what codex leaves), the loop removes
// what was missing before it and is now an empty directory, saying so;
// what was there before, or holds something, stays.
func TestCodexSandboxLeftoversTakenBack(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { codexSandboxLeftovers(t, workers) })
	}
}

func codexSandboxLeftovers(t *testing.T, workers int) {
	t.Setenv("HOME", t.TempDir())
	st, p := newRepo(t, max(workers, 1))
	root := st.Repo.Root
	tmp := t.TempDir()
	bin := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	fake := `#!/bin/sh
cat >/dev/null
mkdir -p .agents "$TMPDIR/.git" "$TMPDIR/.codex"
echo kept > "$TMPDIR/.codex/config.toml"
echo x > "f-$WIGGUM_STORY"
`
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	// Made by the person before the run: never the attempt's.
	for _, d := range []string{filepath.Join(tmp, ".aws"), filepath.Join(root, ".aws")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prof, err := agent.Builtin("codex")
	if err != nil {
		t.Fatal(err)
	}
	o := opts(p, "")
	o.Agent, o.Workers = prof, workers
	var out bytes.Buffer
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != max(workers, 1) {
		t.Fatalf("the stories should be done: %v %+v\n%s", err, sum, out.String())
	}
	gone := []string{filepath.Join(tmp, ".git")}
	if workers == 0 {
		gone = append(gone, filepath.Join(root, ".agents"))
	} else if !strings.Contains(out.String(), "/.agents: removed (openai/codex#31599)") {
		t.Errorf("the run did not say it removed the .agents codex left in a worker's tree:\n%s", out.String())
	}
	for _, g := range gone {
		if _, err := os.Lstat(g); !os.IsNotExist(err) {
			t.Errorf("%s: the empty directory the attempt's codex left is still there (%v)\n%s", g, err, out.String())
		}
		if want := "codex's sandbox left empty " + g + ": removed (openai/codex#31599)"; !strings.Contains(out.String(), want) {
			t.Errorf("the run did not say %q:\n%s", want, out.String())
		}
	}
	for _, kept := range []string{filepath.Join(tmp, ".aws"), filepath.Join(root, ".aws"), filepath.Join(tmp, ".codex", "config.toml")} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s should stay (there before the attempt, or not empty): %v", kept, err)
		}
	}
	for _, left := range []string{filepath.Join(tmp, ".aws"), filepath.Join(root, ".aws"), filepath.Join(tmp, ".codex")} {
		if strings.Contains(out.String(), "empty "+left+":") {
			t.Errorf("the run named %s, which it left alone:\n%s", left, out.String())
		}
	}
}
