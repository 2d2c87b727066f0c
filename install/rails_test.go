package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// The settings wiggum's commits and the repository's remotes rely on are
// put back exactly as they were: a multi-valued key in order, a
// subsection in its case, a key that was unset unset again, and the rest
// of the config (a remote the attempt added, an unrelated setting) as
// the attempt left it.
func TestRestoreSettingsPutsBackWhatChanged(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "git", "remote", "add", "Up", "https://example.com/a.git")
	run(t, dir, "git", "config", "--add", "remote.Up.pushurl", "https://example.com/p1.git")
	run(t, dir, "git", "config", "--add", "remote.Up.pushurl", "https://example.com/p2.git")
	run(t, dir, "git", "config", "http.sslVerify", "true")
	before := GitRailsOf(ctx, repo)

	run(t, dir, "git", "remote", "set-url", "Up", "https://elsewhere.example/a.git")
	run(t, dir, "git", "config", "--unset-all", "remote.Up.pushurl")
	run(t, dir, "git", "config", "http.sslVerify", "false")
	run(t, dir, "git", "config", "http.proxy", "http://127.0.0.1:9")
	run(t, dir, "git", "config", "commit.gpgSign", "true")
	run(t, dir, "git", "remote", "add", "new", "https://example.com/new.git")
	run(t, dir, "git", "config", "core.editor", "vi")
	after := GitRailsOf(ctx, repo)

	changed := strings.Join(before.ChangedSettings(after), "; ")
	for _, want := range []string{
		"remote.Up.url = https://elsewhere.example/a.git (was https://example.com/a.git)",
		"remote.Up.pushurl unset (was https://example.com/p1.git, https://example.com/p2.git)",
		"http.sslverify = false (was true)",
		"http.proxy = http://127.0.0.1:9 (was unset)",
		"commit.gpgsign = true (was unset)",
	} {
		if !strings.Contains(changed, want) {
			t.Errorf("ChangedSettings lacks %q:\n%s", want, changed)
		}
	}
	if strings.Contains(changed, "remote.new") || strings.Contains(changed, "core.editor") {
		t.Errorf("ChangedSettings names what it leaves alone:\n%s", changed)
	}
	if err := before.RestoreSettings(ctx, repo, after); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"remote.Up.url":     "https://example.com/a.git",
		"remote.Up.pushurl": "https://example.com/p1.git\nhttps://example.com/p2.git",
		"http.sslVerify":    "true",
		"remote.new.url":    "https://example.com/new.git",
		"core.editor":       "vi",
	} {
		if got := run(t, dir, "git", "config", "--get-all", key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	for _, key := range []string{"http.proxy", "commit.gpgSign"} {
		if out, err := repo.Run(ctx, "config", "--get", key); err == nil {
			t.Errorf("%s still set: %q", key, out)
		}
	}
	if got := before.ChangedSettings(GitRailsOf(ctx, repo)); len(got) != 0 {
		t.Errorf("after the restore, still changed: %v", got)
	}
}

// The person's own git config and global ignore file are read too: a
// command setting or a core.hooksPath an attempt adds there, or a pattern
// it adds to the global ignore file, is seen (each is read by git in
// every repository, wiggum's own commands included) - and a setting
// another config file holds is not taken for the global one.
func TestGlobalGitConfigIsRead(t *testing.T) {
	dir := gitRepo(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"} {
		t.Setenv(v, "") // put back after the test
		os.Unsetenv(v)
	}
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGit(ctx, repo, false); err != nil {
		t.Fatal(err)
	}
	before := GitRailsOf(ctx, repo)
	run(t, dir, "git", "config", "--global", "core.fsmonitor", "touch /tmp/x")
	run(t, dir, "git", "config", "--global", "core.hooksPath", "/dev/null")
	// Claude Code's own line for its settings.local.json is no change.
	if err := os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "git", "ignore"), []byte("**/.claude/settings.local.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := before.IgnoreChanged(GitRailsOf(ctx, repo)); f != "" {
		t.Errorf("claude's own ignore line is taken for a change: %q", f)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "git", "ignore"), []byte("**/.claude/settings.local.json\n*.go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := GitRailsOf(ctx, repo)
	if added := strings.Join(before.AddedCommands(after), "; "); !strings.Contains(added, "core.fsmonitor = touch /tmp/x (in "+filepath.Join(home, ".gitconfig")+")") {
		t.Errorf("the global command setting is not seen: %q", added)
	}
	if what, restorable := before.Broken(after); !strings.Contains(what, "core.hooksPath in your own git config") || restorable {
		t.Errorf("the global core.hooksPath is not seen: %q %v", what, restorable)
	}
	if f := before.IgnoreChanged(after); f != filepath.Join(home, ".config", "git", "ignore") {
		t.Errorf("the global ignore file's change is not seen: %q", f)
	}
	if err := before.RestoreIgnore(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "git", "ignore")); err == nil {
		t.Error("the global ignore file the attempt made is left")
	}
	if err := before.RemoveAdded(ctx, repo, after); err != nil {
		t.Fatal(err)
	}
	if out := run(t, dir, "git", "config", "--global", "--list"); strings.Contains(out, "fsmonitor") {
		t.Errorf("the global command setting is not taken out:\n%s", out)
	}
}

// A remote renamed or removed by an attempt (git remote rename origin
// upstream) is put back whole: its url and its fetch refspec, and every
// other key of its section - not only the url, which left a remote that
// fetched nothing into refs/remotes/origin/.
func TestRestoreSettingsPutsBackARenamedRemote(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "git", "remote", "add", "origin", "https://example.com/a.git")
	run(t, dir, "git", "config", "remote.origin.tagOpt", "--no-tags")
	before := GitRailsOf(ctx, repo)
	run(t, dir, "git", "remote", "rename", "origin", "upstream")
	after := GitRailsOf(ctx, repo)
	if err := before.RestoreSettings(ctx, repo, after); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"remote.origin.url":    "https://example.com/a.git",
		"remote.origin.fetch":  "+refs/heads/*:refs/remotes/origin/*",
		"remote.origin.tagopt": "--no-tags",
	} {
		if got, _ := repo.Run(ctx, "config", "--get-all", key); strings.TrimSpace(got) != want {
			t.Errorf("%s = %q, want %q", key, strings.TrimSpace(got), want)
		}
	}
}

// A command setting is read as git reads it - an inline comment, quotes
// in the middle of the value, a subsection with a "]" - so the one an
// attempt plants is named with the value git runs and taken out; git no
// longer has it afterwards.
func TestAddedCommandsAsGitReadsThem(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	before := GitRailsOf(ctx, repo)
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[core]\n\tfsmonitor = /tmp/evil.sh ; a comment\n[filter \"a]b\"]\n\tclean = /tmp/\"evil 2.sh\" # another\n")
	f.Close()
	after := GitRailsOf(ctx, repo)
	added := strings.Join(before.AddedCommands(after), "; ")
	for _, want := range []string{"core.fsmonitor = /tmp/evil.sh (in ", "filter.a]b.clean = /tmp/evil 2.sh (in "} {
		if !strings.Contains(added, want) {
			t.Errorf("AddedCommands lacks %q: %q", want, added)
		}
	}
	if err := before.RemoveAdded(ctx, repo, after); err != nil {
		t.Fatal(err)
	}
	if out, err := repo.Run(ctx, "config", "--local", "--get-regexp", "fsmonitor|filter"); err == nil {
		t.Fatalf("git still has the planted settings:\n%s", out)
	}
}

// core.hooksPath is seen wherever git reads it for the repository: on a
// section's header line, and in the worktree's config.worktree once
// extensions.worktreeConfig is on.
func TestHooksPathAsGitReadsIt(t *testing.T) {
	ctx := context.Background()
	for name, plant := range map[string]func(dir string){
		"header line": func(dir string) {
			f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("[core] hooksPath = /dev/null\n")
			f.Close()
		},
		"config.worktree": func(dir string) {
			run(t, dir, "git", "config", "extensions.worktreeConfig", "true")
			if err := os.WriteFile(filepath.Join(dir, ".git", "config.worktree"), []byte("[core]\n\thooksPath = /dev/null\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := gitRepo(t)
			repo, err := git.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := InstallGit(ctx, repo, false); err != nil {
				t.Fatal(err)
			}
			before := GitRailsOf(ctx, repo)
			plant(dir)
			if got := run(t, dir, "git", "config", "core.hooksPath"); got != "/dev/null" {
				t.Fatalf("git does not read the planted hooksPath: %q", got)
			}
			if what, restorable := before.Broken(GitRailsOf(ctx, repo)); !strings.Contains(what, "core.hooksPath in the repository's git config (") ||
				!strings.Contains(what, ": /dev/null)") || restorable {
				t.Fatalf("Broken = %q, %v", what, restorable)
			}
		})
	}
}

// A read of the config that failed (a process or file limit hit for a
// moment, a git killed) knows none of the settings: compared with a read
// that worked, every command setting - the person's credential helpers,
// git-lfs's filters, in their own and the system's config - looked added
// by the attempt, and RemoveAdded took them out. Nothing is compared or
// taken out when either read failed.
func TestAddedCommandsNeedBothReads(t *testing.T) {
	dir := gitRepo(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	system := filepath.Join(t.TempDir(), "gitconfig")
	t.Setenv("GIT_CONFIG_SYSTEM", system)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	for _, v := range []string{"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	sys := "[credential \"https://example.invalid\"]\n\thelper = fakehelper.sh\n[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\trequired = true\n"
	global := "[user]\n\tname = u\n\temail = u@example.invalid\n[credential]\n\thelper = store\n"
	if err := os.WriteFile(system, []byte(sys), 0o644); err != nil {
		t.Fatal(err)
	}
	gc := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(gc, []byte("[user\n"), 0o644); err != nil { // a read that fails
		t.Fatal(err)
	}
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	before := GitRailsOf(ctx, repo)
	if before.ConfigErr() == nil {
		t.Fatal("the config read did not fail")
	}
	if err := os.WriteFile(gc, []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	after := GitRailsOf(ctx, repo)
	if err := after.ConfigErr(); err != nil {
		t.Fatal(err)
	}
	if added := before.AddedCommands(after); len(added) != 0 {
		t.Errorf("settings taken for added against a read that failed: %q", added)
	}
	if err := before.RemoveAdded(ctx, repo, after); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{system: sys, gc: global} {
		if got, _ := os.ReadFile(file); string(got) != want {
			t.Errorf("%s changed:\n%s", file, got)
		}
	}
}
