package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestUnattendedEnv(t *testing.T) {
	got := UnattendedEnv([]string{"A=1", "GPG_TTY=/dev/pts/3", "SSH_ASKPASS_REQUIRE=force", "EDITOR=vim", "B=2"})
	want := []string{"A=1", "B=2", "SSH_ASKPASS_REQUIRE=never", "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", "EDITOR=true", "VISUAL=true"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// sshKey makes an ed25519 key whose private file has passphrase pass.
func sshKey(t *testing.T, pass string) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is not installed; .ci/run installs openssh-client")
		}
		t.Skip("ssh-keygen is not installed (openssh-client)")
	}
	key := filepath.Join(t.TempDir(), "k")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", pass, "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return key
}

// What git signs with commit.gpgSign on - and what commit-tree, which does
// not follow it, signs when asked - and a key that wants a passphrase
// failing at once, with ssh-keygen's words, instead of asking.
func TestSigning(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if on, err := r.SignsCommits(ctx); err != nil || on {
		t.Fatalf("SignsCommits with nothing set: %v %v", on, err)
	}
	gitT(t, dir, "config", "gpg.format", "ssh")
	gitT(t, dir, "config", "commit.gpgSign", "yes")
	gitT(t, dir, "config", "user.signingKey", sshKey(t, "")+".pub")
	if on, err := r.SignsCommits(ctx); err != nil || !on {
		t.Fatalf("SignsCommits with commit.gpgSign=yes: %v %v", on, err)
	}
	if err := r.SignProbe(ctx); err != nil {
		t.Fatalf("SignProbe with a key that needs nothing: %v", err)
	}
	tree := gitT(t, dir, "rev-parse", "HEAD^{tree}")
	head := gitT(t, dir, "rev-parse", "HEAD")
	for _, sign := range []bool{false, true} {
		c, err := r.CommitTree(ctx, tree, []string{head}, "m\n", sign)
		if err != nil {
			t.Fatal(err)
		}
		body := gitT(t, dir, "cat-file", "commit", c)
		if strings.Contains(body, "\ngpgsig ") != sign || !strings.Contains(body, "parent "+head) {
			t.Errorf("CommitTree(sign=%v):\n%s", sign, body)
		}
	}
	gitT(t, dir, "config", "user.signingKey", sshKey(t, "a passphrase")+".pub")
	err = r.SignProbe(ctx)
	if err == nil || !strings.Contains(err.Error(), "passphrase") {
		t.Fatalf("SignProbe with a key that wants a passphrase: %v", err)
	}
	if _, err := r.CommitTree(ctx, tree, []string{head}, "m\n", true); err == nil {
		t.Fatal("CommitTree signed with a key that wants a passphrase")
	}
}

// A Repo's Config reaches its git, after CleanEnv's own settings (the lock
// waits) rather than over them, and after a caller's GIT_CONFIG_* env.
func TestRepoConfig(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Config = [][2]string{{"core.hooksPath", "/elsewhere/hooks"}}
	for key, want := range map[string]string{"core.hooksPath": "/elsewhere/hooks", "core.filesRefLockTimeout": "10000", "wiggum.test": "caller"} {
		out, err := r.RunEnv(ctx, WithConfig(nil, [2]string{"wiggum.test", "caller"}), nil, "config", "--get", key)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("git config --get %s = %q, %v; want %q", key, out, err, want)
		}
	}
}
