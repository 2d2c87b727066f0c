package install

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// gitWithin runs git in dir and fails the test, rather than hang it, when
// git does not finish in a minute (a config that includes a FIFO).
func gitWithin(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("git %s did not finish: %v", strings.Join(args, " "), ctx.Err())
	}
	return strings.TrimSpace(string(out)), err
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// An include of a FIFO - in the repository's config, or in a file the
// config includes (includeIf) - made every git block opening it, the
// rails' read of the configuration first, for ever. The read now ends at
// ConfigReadLimit, names the FIFO and the include, and Unblock takes the
// include out of the file that has it, after which git reads the config
// again; what the person set around it stays.
func TestUnblockTakesOutAnIncludeOfAFIFO(t *testing.T) {
	limit := ConfigReadLimit
	ConfigReadLimit = time.Second
	t.Cleanup(func() { ConfigReadLimit = limit })
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "gitconfig"))
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forget(repo) })
	run(t, dir, "git", "config", "user.email", "t@example.com")
	if blocked, taken, err := Unblock(ctx, repo); blocked != nil || taken != nil || err != nil {
		t.Fatalf("Unblock of a readable config: %v, %v, %v", blocked, taken, err)
	}

	config := filepath.Join(repo.CommonDir, "config")
	mkfifo(t, filepath.Join(repo.GitDir, "x"))
	run(t, dir, "git", "config", "include.path", "x")
	// A git of someone else's, blocked there: let go once the include
	// is taken out, not left waiting.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	waiting := exec.CommandContext(wctx, "git", "config", "--list")
	waiting.Dir = dir
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	_, err = configOf(ctx, repo)
	var be *BlockedError
	if !errors.As(err, &be) || len(be.Blocking) != 1 {
		t.Fatalf("configOf with an include of a FIFO: %v, want a BlockedError naming it", err)
	}
	want := "git cannot read its configuration: " + filepath.Join(repo.GitDir, "x") + " blocks (a FIFO), named by include.path in " + config
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	blocked, taken, err := Unblock(ctx, repo)
	if err != nil || blocked == nil {
		t.Fatalf("Unblock: %v, %v", blocked, err)
	}
	if len(taken) != 1 || taken[0] != "include.path = x (in "+config+")" {
		t.Errorf("taken out: %q", taken)
	}
	if err := waiting.Wait(); wctx.Err() != nil {
		t.Errorf("a git blocked on the FIFO was not let go: %v", err)
	}
	if v, err := gitWithin(t, dir, "config", "--get-all", "include.path"); err == nil {
		t.Errorf("include.path is still %q", v)
	}
	if v, _ := gitWithin(t, dir, "config", "user.email"); v != "t@example.com" {
		t.Errorf("user.email is %q after Unblock, want the repository's t@example.com", v)
	}

	// In a file the config includes, with a condition: taken out of that
	// file; the include of it stays.
	extra := filepath.Join(t.TempDir(), "extra.cfg")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := os.WriteFile(extra, []byte("[user]\n\tname = Extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, fifo)
	run(t, dir, "git", "config", "include.path", extra)
	run(t, dir, "git", "config", "--file", extra, "includeIf.gitdir:/.path", fifo)
	blocked, taken, err = Unblock(ctx, repo)
	if err != nil || blocked == nil {
		t.Fatalf("Unblock: %v, %v", blocked, err)
	}
	if len(taken) != 1 || taken[0] != "includeif.gitdir:/.path = "+fifo+" (in "+extra+")" {
		t.Errorf("taken out: %q", taken)
	}
	if v, _ := gitWithin(t, dir, "config", "user.name"); v != "Extra" {
		t.Errorf("user.name is %q, want the included file's Extra", v)
	}

	// A config file of git's own that is a FIFO cannot be put back:
	// said, never waited on.
	global := filepath.Join(t.TempDir(), "global-fifo")
	mkfifo(t, global)
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	forget(repo)
	_, _, err = Unblock(ctx, repo)
	if err == nil || !strings.Contains(err.Error(), global+" blocks (a FIFO), and it is one of git's own config files, which wiggum cannot put back") {
		t.Errorf("Unblock with a FIFO for the global config: %v", err)
	}
}
