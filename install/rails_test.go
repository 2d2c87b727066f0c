package install

import (
	"context"
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
	before := GitRailsOf(repo)

	run(t, dir, "git", "remote", "set-url", "Up", "https://elsewhere.example/a.git")
	run(t, dir, "git", "config", "--unset-all", "remote.Up.pushurl")
	run(t, dir, "git", "config", "http.sslVerify", "false")
	run(t, dir, "git", "config", "http.proxy", "http://127.0.0.1:9")
	run(t, dir, "git", "config", "commit.gpgSign", "true")
	run(t, dir, "git", "remote", "add", "new", "https://example.com/new.git")
	run(t, dir, "git", "config", "core.editor", "vi")
	after := GitRailsOf(repo)

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
	if got := before.ChangedSettings(GitRailsOf(repo)); len(got) != 0 {
		t.Errorf("after the restore, still changed: %v", got)
	}
}
