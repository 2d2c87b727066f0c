package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
)

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "settings", "s.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRoundTripByteIdentical: install then uninstall gives back the exact
// bytes of a settings file that already held other hooks and keys, for
// every agent and option set; installing twice changes nothing.
func TestRoundTripByteIdentical(t *testing.T) {
	fixtures := map[string]string{"claude": "claude_settings.json", "codex": "codex_hooks.json", "gemini": "gemini_settings.json", "cursor": "cursor_hooks.json"}
	for name, fixture := range fixtures {
		for _, opts := range []AgentOptions{{}, {Guard: "always", RequireRead: true}} {
			a := Agents[name]
			path := copyFixture(t, fixture)
			orig := read(t, path)
			ch, err := InstallAgent(a, path, opts)
			if err != nil || ch == nil {
				t.Fatalf("%s: install: %v %v", name, ch, err)
			}
			installed := read(t, path)
			var v map[string]any
			if err := json.Unmarshal(installed, &v); err != nil {
				t.Fatalf("%s: installed file is not JSON: %v", name, err)
			}
			if !bytes.Contains(installed, []byte(a.Command(opts))) {
				t.Fatalf("%s: no wiggum entry:\n%s", name, installed)
			}
			if !strings.Contains(ch.Diff(), "+") {
				t.Fatalf("%s: empty diff", name)
			}
			// every unrelated value is still there
			checkSubset(t, name, orig, installed)
			if ch, err := InstallAgent(a, path, opts); err != nil || ch != nil || !bytes.Equal(read(t, path), installed) {
				t.Fatalf("%s: second install changed something: %v %v", name, ch, err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode changed to %v", name, fi.Mode())
			}
			if _, err := UninstallAgent(a, path); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); !bytes.Equal(got, orig) {
				t.Fatalf("%s %+v: not byte-identical after uninstall:\n%s", name, opts, unifiedDiff("s.json", string(orig), string(got)))
			}
		}
	}
}

// checkSubset fails when a key path of before is missing from after.
func checkSubset(t *testing.T, name string, before, after []byte) {
	t.Helper()
	var b, a any
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	var walk func(p string, x, y any)
	walk = func(p string, x, y any) {
		switch x := x.(type) {
		case map[string]any:
			ym, ok := y.(map[string]any)
			if !ok {
				t.Errorf("%s: %s is no longer an object", name, p)
				return
			}
			for k, v := range x {
				walk(p+"."+k, v, ym[k])
			}
		case []any:
			ya, ok := y.([]any)
			if !ok || len(ya) < len(x) {
				t.Errorf("%s: %s lost items", name, p)
				return
			}
			for i, v := range x {
				walk(p, v, ya[i])
			}
		default:
			if xb, _ := json.Marshal(x); string(xb) != func() string { yb, _ := json.Marshal(y); return string(yb) }() {
				t.Errorf("%s: %s changed", name, p)
			}
		}
	}
	walk("", b, a)
}

func TestInstallCreatesAndUninstallRemovesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "settings.json")
	if _, err := InstallAgent(Agents["claude"], path, AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := UninstallAgent(Agents["claude"], path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file and directory install created should be gone: %v", err)
	}
}

// A settings file that is a symbolic link (a dotfiles manager's: stow,
// chezmoi, home-manager) was replaced by a regular file: the person's link
// to their dotfiles was gone, their later changes there no longer applied.
// Now install and uninstall edit the file it points to and keep the link;
// uninstall leaves {} there rather than removing it; a link to nothing is
// refused with nothing changed.
func TestSymlinkedSettingsStayLinked(t *testing.T) {
	for _, name := range []string{"claude", "codex", "gemini", "cursor"} {
		t.Run(name, func(t *testing.T) {
			a := Agents[name]
			dir := t.TempDir()
			target := filepath.Join(dir, "dotfiles", name+".json")
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "home", "."+name, "settings.json")
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../dotfiles/"+name+".json", link); err != nil {
				t.Fatal(err)
			}
			isLink := func(when string) {
				t.Helper()
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Fatalf("%s: the link was replaced (%v, %v)", when, fi.Mode(), err)
				}
			}
			if _, err := InstallAgent(a, link, AgentOptions{}); err != nil {
				t.Fatal(err)
			}
			isLink("after install")
			if !bytes.Contains(read(t, target), []byte("wiggum")) {
				t.Fatalf("the linked file holds no wiggum hook:\n%s", read(t, target))
			}
			if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the linked file's mode: %v, %v", fi.Mode(), err)
			}
			if _, err := UninstallAgent(a, link); err != nil {
				t.Fatal(err)
			}
			isLink("after uninstall")
			if got := bytes.TrimSpace(read(t, target)); string(got) != "{}" {
				t.Fatalf("after uninstall the linked file holds %s", got)
			}
		})
	}
	dir := t.TempDir()
	dangling := filepath.Join(dir, "settings.json")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "settings.json"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallAgent(Agents["claude"], dangling, AgentOptions{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a link to nothing: %v", err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the dangling link was replaced")
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Fatal("a directory was made for the dangling link")
	}
}

func TestOptionsChangeReplacesEntries(t *testing.T) {
	path := copyFixture(t, "claude_settings.json")
	a := Agents["claude"]
	if _, err := InstallAgent(a, path, AgentOptions{RequireRead: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallAgent(a, path, AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	data := read(t, path)
	if bytes.Contains(data, []byte("--require-read")) || bytes.Contains(data, []byte("SessionStart")) {
		t.Fatalf("stale entries kept:\n%s", data)
	}
	if n := bytes.Count(data, []byte(`"wiggum hook claude"`)); n != 5 {
		t.Fatalf("%d wiggum entries, want 5", n)
	}
}

func TestMigrateReplacesBashLoopHooks(t *testing.T) {
	path := copyFixture(t, "claude_bashloop.json")
	if _, err := InstallAgent(Agents["claude"], path, AgentOptions{Migrate: true}); err != nil {
		t.Fatal(err)
	}
	data := read(t, path)
	if bytes.Contains(data, []byte(".agents/ralph/hooks")) {
		t.Fatalf("bash loop hooks kept:\n%s", data)
	}
	if !bytes.Contains(data, []byte("./keep-me.sh")) || !bytes.Contains(data, []byte(`"model": "sonnet"`)) {
		t.Fatalf("unrelated entries lost:\n%s", data)
	}
}

func TestRefusesBrokenSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	bad := []byte("{\n  // a comment\n  \"a\": 1\n}\n")
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallAgent(Agents["claude"], path, AgentOptions{}); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	if !bytes.Equal(read(t, path), bad) {
		t.Fatal("a refused install changed the file")
	}
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "git", "init", "-q", "-b", "main")
	run(t, dir, "git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestGitChainsForeignHookAndRestoresIt(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	foreign := []byte("#!/bin/sh\necho foreign-hook-ran >> \"$(git rev-parse --git-dir)/foreign.log\"\n")
	hook := filepath.Join(repo.HooksDir, "post-commit")
	if err := os.WriteFile(hook, foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGit(ctx, repo, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, hook+".old"), foreign) || !bytes.Contains(read(t, hook), []byte(checkpoint.GitHookMarker)) {
		t.Fatal("foreign hook not chained")
	}
	// The chained hook still runs on commit (wiggum itself is not on PATH
	// here, which must not break the commit).
	run(t, dir, "git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "two")
	if !bytes.Contains(read(t, filepath.Join(repo.GitDir, "foreign.log")), []byte("foreign-hook-ran")) {
		t.Fatal("chained hook did not run")
	}
	if chs, err := InstallGit(ctx, repo, false); err != nil || len(chs) != 0 {
		t.Fatalf("second install: %v %v", chs, err)
	}
	if _, err := UninstallGit(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, hook), foreign) {
		t.Fatal("foreign hook not restored")
	}
	if _, err := os.Stat(hook + ".old"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(".old left behind")
	}
	if _, err := os.Stat(filepath.Join(repo.HooksDir, "pre-push")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("pre-push shim left behind")
	}
}

// A hook kept as NAME.old runs under its own name: a dispatcher that picks
// what to run by basename "$0" (overcommit-style templates, run-parts
// hooks/NAME.d, shared-hooks templates) found nothing for "pre-push.old"
// and the team's pre-push check was skipped - the push went through.
func TestGitChainedHookRunsUnderItsOwnName(t *testing.T) {
	for _, shell := range []string{"/bin/sh", "/usr/bin/env bash"} {
		t.Run(filepath.Base(strings.Fields(shell)[len(strings.Fields(shell))-1]), func(t *testing.T) {
			dir := gitRepo(t)
			remote := filepath.Join(t.TempDir(), "remote.git")
			run(t, dir, "git", "init", "-q", "--bare", remote)
			ctx := context.Background()
			repo, err := git.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "githooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "githooks", "pre-push"), []byte("#!/bin/sh\necho \"team check refuses the push\" >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			dispatch := "#!" + shell + "\nname=\"$(basename \"$0\")\"\nif [ -f \"githooks/$name\" ]; then exec \"githooks/$name\" \"$@\"; fi\n"
			if err := os.WriteFile(filepath.Join(repo.HooksDir, "pre-push"), []byte(dispatch), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := InstallGit(ctx, repo, false); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "push", "-q", remote, "main:wip")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "team check refuses the push") {
				t.Fatalf("the chained dispatcher did not run the team's check (err %v):\n%s", err, out)
			}
		})
	}
}

func TestGitLinkedWorktreeUsesCommonHooks(t *testing.T) {
	dir := gitRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	run(t, dir, "git", "worktree", "add", "-q", "-b", "story", wt)
	ctx := context.Background()
	repo, err := git.Open(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGit(ctx, repo, false); err != nil {
		t.Fatal(err)
	}
	common := run(t, dir, "git", "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if _, err := os.Stat(filepath.Join(common, "post-commit")); err != nil {
		t.Fatalf("shim not in the shared hooks dir %s: %v", common, err)
	}
	main, _ := git.Open(ctx, dir)
	st := &checkpoint.State{Repo: main}
	if !st.JournalOn() {
		t.Fatal("the main tree does not see the journal hook")
	}
}

func TestGitForeignHooksPath(t *testing.T) {
	dir := gitRepo(t)
	run(t, dir, "git", "config", "core.hooksPath", ".husky")
	fe := refusedThenForced(t, dir, "a directory of your working tree", filepath.Join(dir, ".husky"))
	if !fe.InTree {
		t.Errorf("%+v: not in the tree", fe)
	}
}

// refusedThenForced installs git hooks in dir without --force, wants a
// ForeignHooksPathError saying want and nothing made at hooks, then with
// --force, wants the hooks there; it returns the refusal.
func refusedThenForced(t *testing.T, dir, want, hooks string) *ForeignHooksPathError {
	t.Helper()
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = InstallGit(ctx, repo, false)
	var fe *ForeignHooksPathError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
		t.Fatalf("want a refusal saying %q, got %v", want, err)
	}
	if _, err := os.Stat(hooks); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused install created files")
	}
	if _, err := InstallGit(ctx, repo, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-push")); err != nil {
		t.Fatalf("--force should install into core.hooksPath: %v", err)
	}
	return fe
}

// A core.hooksPath in the person's global git configuration is every
// repository's: the refusal says so, and so does what HooksPathShared
// gives the install command to say after --force; a repository's own
// setting is not called shared.
func TestGitGlobalHooksPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	// git config --global writes where GIT_CONFIG_GLOBAL says, when it is
	// set: the person's own file, not this test's home.
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	shared := filepath.Join(home, ".githooks")
	run(t, home, "git", "config", "--global", "core.hooksPath", shared)
	dir := gitRepo(t)
	if fe := refusedThenForced(t, dir, "in your global git configuration, so every repository on this machine runs the hooks", shared); !fe.Shared() || fe.InTree {
		t.Errorf("%+v: not shared, or in the tree", fe)
	}
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := HooksPathShared(ctx, repo); e == nil || e.Scope != "global" || e.Path != shared {
		t.Fatalf("HooksPathShared = %+v", e)
	}
	run(t, dir, "git", "config", "core.hooksPath", ".husky")
	if e := HooksPathShared(ctx, repo); e != nil {
		t.Fatalf("the repository's own setting called shared: %+v", e)
	}
}

func TestShimIsPOSIX(t *testing.T) {
	if _, err := exec.LookPath("dash"); err != nil {
		t.Skip("dash not installed")
	}
	for _, name := range []string{"post-commit", "pre-push"} {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, shim(name, "/opt/it's/wiggum", "/bin/b'ash"), 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, filepath.Dir(path), "dash", "-n", path)
	}
}

func TestDiff(t *testing.T) {
	d := unifiedDiff("f", "a\nb\nc\n", "a\nB\nc\n")
	want := "--- a/f\n+++ b/f\n@@\n a\n-b\n+B\n c\n"
	if d != want {
		t.Fatalf("got %q", d)
	}
}

func TestSettingsDocument(t *testing.T) {
	for name, a := range Agents {
		var v map[string]any
		doc := Settings(a, AgentOptions{Guard: "always"})
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := v["hooks"].(map[string]any); !ok || !bytes.Contains(doc, []byte(`"wiggum hook `+name+` --guard always"`)) {
			t.Fatalf("%s: %s", name, doc)
		}
	}
}

// An attempt that deletes or rewrites a git hook shim, or points git at
// another hooks directory, breaks the git rails; the shims are put back
// byte for byte. A repository without wiggum's git hooks has none to break.
func TestGitRails(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if none := GitRailsOf(ctx, repo); len(none.shims) > 0 || first(none.Broken(GitRailsOf(ctx, repo))) != "" {
		t.Fatal("rails without wiggum's git hooks")
	}
	if _, err := InstallGit(ctx, repo, false); err != nil {
		t.Fatal(err)
	}
	before := GitRailsOf(ctx, repo)
	prePush, postCommit := filepath.Join(repo.HooksDir, "pre-push"), filepath.Join(repo.HooksDir, "post-commit")
	want := read(t, prePush)
	if what, _ := before.Broken(GitRailsOf(ctx, repo)); what != "" {
		t.Fatalf("unchanged, yet broken: %s", what)
	}
	if err := os.Remove(prePush); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(postCommit, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if what, restorable := before.Broken(GitRailsOf(ctx, repo)); what != "removed or changed wiggum's git hook(s) post-commit and pre-push" || !restorable {
		t.Fatalf("Broken = %q", what)
	}
	if err := before.Restore(repo); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, prePush), want) || first(before.Broken(GitRailsOf(ctx, repo))) != "" {
		t.Fatal("the shims were not put back as they were")
	}
	if fi, err := os.Stat(prePush); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("the restored shim is not executable: %v", err)
	}
	run(t, dir, "git", "config", "core.hooksPath", "/dev/null")
	if what, restorable := before.Broken(GitRailsOf(ctx, repo)); !strings.Contains(what, "core.hooksPath") || restorable {
		t.Fatalf("a hooksPath set by the attempt: Broken = %q", what)
	}
}

func first(what string, _ bool) string { return what }

// The hooks directory's other hooks (not wiggum's shims, not git's
// samples) are rails too: one added or changed is named, and put back -
// an added one removed, a changed one written as it was.
func TestGitRailsOtherHooks(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGit(ctx, repo, false); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(repo.HooksDir, "pre-commit")
	if err := os.WriteFile(own, []byte("#!/bin/sh\nmake lint\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := GitRailsOf(ctx, repo)
	if err := os.WriteFile(own, []byte("#!/bin/sh\nmake lint\nrm -rf .ralph\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(repo.HooksDir, "post-checkout")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\ngit clean -fdx\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo.HooksDir, "pre-rebase.sample"), []byte("changed sample\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	after := GitRailsOf(ctx, repo)
	if got := strings.Join(before.ChangedHooks(after), " "); got != "post-checkout pre-commit" {
		t.Fatalf("ChangedHooks = %q", got)
	}
	if err := before.RestoreHooks(repo, after); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, own)); got != "#!/bin/sh\nmake lint\n" {
		t.Fatalf("the project's own pre-commit was not put back: %q", got)
	}
	if _, err := os.Stat(planted); !os.IsNotExist(err) {
		t.Fatalf("the planted hook is still there: %v", err)
	}
	if got := before.ChangedHooks(GitRailsOf(ctx, repo)); len(got) != 0 {
		t.Fatalf("after RestoreHooks: %v", got)
	}
}

// Settings git runs as commands that an attempt added are taken out; in a
// parallel run another worker may have taken one out already, which is no
// error.
func TestGitRailsRemoveAddedCommands(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Run(ctx, "config", "credential.helper", "store"); err != nil {
		t.Fatal(err)
	}
	before := GitRailsOf(ctx, repo)
	for _, kv := range [][2]string{{"core.fsmonitor", "rm -rf .ralph; false"}, {"filter.x.clean", "cat"}, {"core.fsmonitor2", "not a command"}, {"user.name", "agent"}} {
		if _, err := repo.Run(ctx, "config", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	after := GitRailsOf(ctx, repo)
	added := strings.Join(before.AddedCommands(after), "; ")
	if !strings.Contains(added, "core.fsmonitor = rm -rf .ralph; false") || !strings.Contains(added, "filter.x.clean = cat") || strings.Contains(added, "credential") || strings.Contains(added, "user.name") {
		t.Fatalf("AddedCommands = %q", added)
	}
	for range 2 { // the second time, as another worker would: already gone
		if err := before.RemoveAdded(ctx, repo, after); err != nil {
			t.Fatal(err)
		}
	}
	if left := before.AddedCommands(GitRailsOf(ctx, repo)); len(left) != 0 {
		t.Fatalf("left in the config: %v", left)
	}
	if out, _ := repo.Line(ctx, "config", "credential.helper"); out != "store" {
		t.Fatalf("the user's own setting went: %q", out)
	}
}

// A .git/hooks that is a symbolic link to a tracked directory of the
// working tree (a team's hooks): install refuses, nothing written - its
// shims there would be files of the tree, in the next commit. With
// --force it installs there; a link to a directory outside the tree, or
// inside the git directory, is installed into as before.
func TestGitHooksLinkedIntoTheTree(t *testing.T) {
	dir := gitRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, "tools", "githooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	team := filepath.Join(dir, "tools", "githooks", "pre-push")
	if err := os.WriteFile(team, []byte("#!/bin/sh\necho team check\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "git", "add", "tools")
	run(t, dir, "git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "team hooks")
	hooksDir := filepath.Join(dir, ".git", "hooks")
	if err := os.RemoveAll(hooksDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../tools/githooks", hooksDir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = InstallGit(ctx, repo, false)
	var he *HooksInTreeError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "go into the next commit") {
		t.Fatalf("want a refusal, got %v", err)
	}
	if st := run(t, dir, "git", "status", "--porcelain"); st != "" {
		t.Fatalf("a refused install changed the tree:\n%s", st)
	}
	if _, err := InstallGit(ctx, repo, true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(team); !bytes.Contains(data, []byte(checkpoint.GitHookMarker)) {
		t.Fatal("--force did not install")
	}

	// A link out of the tree is the person's shared directory: installed.
	other := gitRepo(t)
	shared := t.TempDir()
	if err := os.RemoveAll(filepath.Join(other, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(other, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	orepo, err := git.Open(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGit(ctx, orepo, false); err != nil {
		t.Fatalf("a hooks link out of the tree: %v", err)
	}
}

// A kept hook that is no shell script but reads its own name (overcommit's
// Ruby template: File.basename($0)) runs as NAME.old: install names it.
func TestRunByOtherNameNamesNonShellDispatchers(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	hooksDir := repo.HooksDir
	for name, text := range map[string]string{
		"pre-push":    "#!/usr/bin/env ruby\nhook_type = File.basename($0)\n",
		"post-commit": "#!/bin/sh\nexec \"githooks/$(basename \"$0\")\"\n",
		"commit-msg":  "#!/usr/bin/env python3\nprint('no name')\n",
	} {
		if err := os.WriteFile(filepath.Join(hooksDir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := InstallGit(ctx, repo, false); err != nil {
		t.Fatal(err)
	}
	got := RunByOtherName(ctx, repo, false)
	if len(got) != 1 || got[0] != filepath.Join(hooksDir, "pre-push.old") {
		t.Fatalf("named %q, want the Ruby pre-push.old only", got)
	}
}
