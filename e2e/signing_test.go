package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/gitserver"
)

// sshSigning makes dir's git sign every commit (commit.gpgSign) with a new
// ed25519 key of format ssh, whose private key file has the passphrase
// pass ("" for none). It returns the key's path (the public key is
// path.pub) and an allowed-signers file for git verify-commit.
func sshSigning(t *testing.T, dir, pass string) (key, allowed string) {
	t.Helper()
	needTool(t, "ssh-keygen", "openssh-client")
	keys := t.TempDir()
	key = filepath.Join(keys, "signing")
	mustRun(t, keys, "ssh-keygen", "-q", "-t", "ed25519", "-C", "wiggum-test", "-N", pass, "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	allowed = filepath.Join(keys, "allowed_signers")
	writeFile(t, allowed, "* namespaces=\"git\" "+string(pub))
	for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingKey", key + ".pub"}, {"commit.gpgSign", "true"}} {
		mustRun(t, dir, "git", "config", kv[0], kv[1])
	}
	return key, allowed
}

// onATerminal runs wiggum with args in dir on a pseudo-terminal (util-linux
// script) whose input stays open and says nothing, as an unattended run
// left in a terminal: anything that asks the terminal waits for ever.
// It fails the test if wiggum has not exited within patience.
func onATerminal(t *testing.T, dir string, env []string, args ...string) (code int, out string) {
	t.Helper()
	script := needTool(t, "script", "util-linux")
	quoted := []string{wiggumBin}
	for _, a := range args {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	inner := strings.Join(quoted, " ") + `; echo "wiggum exited $?"`
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", inner, "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, baseEnv...), env...)
	silent, keepOpen, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keepOpen.Close()
	defer silent.Close()
	cmd.Stdin = silent
	cmd.WaitDelay = time.Second
	data, _ := cmd.CombinedOutput()
	out = string(data)
	if ctx.Err() != nil {
		t.Fatalf("wiggum %s was still running after %s on a terminal nobody answers; its output:\n%s", strings.Join(args, " "), patience, out)
	}
	i := strings.LastIndex(out, "wiggum exited ")
	if i < 0 {
		t.Fatalf("no exit status in the terminal's output:\n%s", out)
	}
	var n int
	for _, c := range strings.TrimSpace(out[i+len("wiggum exited "):]) {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n, out
}

// A person who signs every commit with a key that needs a passphrase
// starts a run in a terminal and leaves. Before, the first story's commit
// ran ssh-keygen, which asked for the passphrase on the terminal - hidden
// under wiggum's status line - and waited there for ever. Now the run
// checks before its first attempt that a commit can be signed with nobody
// at the terminal, and stops at once with exit 1 saying why and what to
// do; no agent has run, nothing changed.
func TestSigningNeverWaitsOnTheTerminal(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
	sshSigning(t, dir, "correct horse")
	head := mustRun(t, dir, "git", "rev-parse", "HEAD")
	code, out := onATerminal(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent)
	if code != 1 || !strings.Contains(out, "commit.gpgSign") || !strings.Contains(out, "ssh-add") {
		t.Fatalf("exit %d, want 1 naming commit.gpgSign and the way on:\n%s", code, out)
	}
	if n := invocations(t, marks); len(n) != 0 {
		t.Errorf("the agent ran: %v", n)
	}
	if now := mustRun(t, dir, "git", "rev-parse", "HEAD"); now != head {
		t.Errorf("HEAD moved from %s to %s", head, now)
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
		t.Errorf("the tree changed:\n%s", st)
	}
	// Told to start over, not "resuming the interrupted run".
	if r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent); r.code != 1 || strings.Contains(r.stdout+r.stderr, "resuming") {
		t.Errorf("the second try: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// An agent whose command asks the terminal something (a passphrase, ssh's
// host key question, an installer's prompt) used to be stopped by SIGTTIN
// at its first read - it runs outside the terminal's foreground group -
// and waited there until --timeout. It now runs with no terminal at all:
// the read fails at once and the agent goes on. gpg and ssh are not
// pointed at the terminal either, and git opens no editor: a git commit
// with no -m stops on its empty message, and git revert takes git's
// message, where vi waited for ever.
func TestAgentNeverWaitsOnTheTerminal(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat > /dev/null
if read -r answer < /dev/tty; then echo "read: $answer"; else echo "no terminal"; fi >> "$MARKS/tty"
echo "GPG_TTY=${GPG_TTY-unset} SSH_ASKPASS_REQUIRE=${SSH_ASKPASS_REQUIRE-unset}" >> "$MARKS/tty"
echo work > work.txt
git add work.txt
git commit; echo "commit exit $?" >> "$MARKS/tty"
git commit -q -m "agent's work"
git revert HEAD; echo "revert exit $?" >> "$MARKS/tty"
echo work > work.txt
`)
	code, out := onATerminal(t, dir, []string{"MARKS=" + marks, "GPG_TTY=/dev/pts/0", "EDITOR=vi"}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--timeout", "20s", "--retries", "0")
	got, _ := os.ReadFile(filepath.Join(marks, "tty"))
	if code != 0 || string(got) != "no terminal\nGPG_TTY=unset SSH_ASKPASS_REQUIRE=never\ncommit exit 1\nrevert exit 0\n" {
		t.Fatalf("exit %d; the agent wrote %q\n%s", code, got, out)
	}
}

// The key leaves its agent in the middle of a run (ssh-add -t, a gpg-agent
// cache that expired): the story whose agent has just finished cannot be
// committed. Before, that counted as the agent's failure: its work was
// rolled back and the agent run again, to fail the same way, until every
// story was skipped. Now the run stops with exit 1, the work left in the
// tree and the attempt's pass in the journal; once the key is back, the
// next run commits that work - signed, with its tick - without running the
// agent again, and goes on.
func TestSigningLostMidRunKeepsTheWork(t *testing.T) {
	for _, workers := range []string{"1", "2"} {
		t.Run("workers="+workers, func(t *testing.T) { signingLostMidRun(t, workers) })
	}
}

func signingLostMidRun(t *testing.T, workers string) {
	needTool(t, "ssh-agent", "openssh-client")
	// US-2's agent finishes only once US-1's has taken the key away: with
	// two workers, US-2 signed and landed first now and then, and its
	// tick's commit was the one that could not be signed.
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-1 ]; then ssh-add -q -D 2>/dev/null; touch "$MARKS/key-gone"; fi
i=0
while [ ! -e "$MARKS/key-gone" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
`)
	key, allowed, env := signingAgent(t, dir, marks)
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "1", "--workers", workers}
	r := wiggum(t, dir, env, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "passed, but git could not sign its commit") {
		t.Fatalf("exit %d, want 1: US-1's commit could not be signed\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if now := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD")); now != head {
		t.Errorf("HEAD moved from %s to %s", head, now)
	}
	// In the main tree, or a parallel run's worktree left for the resume.
	work := filepath.Join(dir, "work-US-1.txt")
	if workers != "1" {
		found, _ := filepath.Glob(filepath.Join(dir, ".ralph", "wiggum", "worktrees", "*", "work-US-1.txt"))
		if len(found) != 1 {
			t.Fatalf("US-1's work is in no worktree: %v\n%s", found, r.stdout)
		}
		work = found[0]
	}
	if data, err := os.ReadFile(work); err != nil || string(data) != "work of US-1\n" {
		t.Fatalf("US-1's work is not in the tree: %q %v", data, err)
	}
	if st := wiggum(t, dir, nil, "status"); !strings.Contains(st.stdout, "could not sign") {
		t.Errorf("wiggum status does not say why the run stopped:\n%s", st.stdout)
	}
	// Run again before mending it: the same stop, nothing lost.
	r = wiggum(t, dir, env, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "sign") {
		t.Fatalf("run again with the key still gone: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if data, err := os.ReadFile(work); err != nil || string(data) != "work of US-1\n" {
		t.Fatalf("US-1's work is gone after the second stop: %q %v\n%s\n%s", data, err, r.stdout, r.stderr)
	}
	// The key is back in its agent.
	keyBackRunsOnce(t, dir, marks, key, env, args)
	subjects := mustRun(t, dir, "git", "log", "--format=%s", head+"..main")
	if workers == "1" && subjects != "US-2: story 2\nUS-1: story 1\n" || !strings.Contains(subjects, "US-1: story 1\n") || !strings.Contains(subjects, "US-2: story 2\n") {
		t.Errorf("the run's commits:\n%s", subjects)
	}
	verifySigned(t, dir, allowed, head+"..main")
	if plan := mustRun(t, dir, "git", "show", "main:plan.md"); strings.Count(plan, "- [x]") != 2 {
		t.Errorf("the committed plan:\n%s", plan)
	}
}

// signingAgent makes dir's git sign with a new ssh key held by an
// ssh-agent of its own, and returns the key, the allowed-signers file and
// the environment that reaches the agent (with MARKS=marks). From then on
// the key file asks a passphrase: only the agent signs; key+".plain" is a
// copy without one, to load into the agent again (ssh-add) once a test
// has taken it away.
func signingAgent(t *testing.T, dir, marks string) (key, allowed string, env []string) {
	t.Helper()
	key, allowed = sshSigning(t, dir, "")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	sshAgent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := sshAgent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sshAgent.Process.Kill(); _ = sshAgent.Wait() })
	env = []string{"MARKS=" + marks, "SSH_AUTH_SOCK=" + sock}
	eventually(t, "ssh-agent listens", func() bool { return exists(sock) })
	if r := run(t, dir, env, "ssh-add", "-q", key); r.code != 0 {
		t.Fatalf("ssh-add: %s", r.stderr)
	}
	data, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key+".plain", data, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "ssh-keygen", "-q", "-p", "-N", "correct horse", "-f", key)
	return key, allowed, env
}

// keyBackRunsOnce loads the signing key into its agent again and runs
// wiggum with args: the run ends well, and each story's agent ran once in
// all.
func keyBackRunsOnce(t *testing.T, dir, marks, key string, env, args []string) {
	t.Helper()
	if r := run(t, dir, env, "ssh-add", "-q", key+".plain"); r.code != 0 {
		t.Fatalf("ssh-add: %s", r.stderr)
	}
	if r := wiggum(t, dir, env, args...); r.code != 0 {
		t.Fatalf("the run after the key came back: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); n["US-1"] != 1 || n["US-2"] != 1 {
		t.Errorf("the agent ran %v times, want once for each story", n)
	}
}

// verifySigned checks that every commit in revs has a good signature.
func verifySigned(t *testing.T, dir, allowed, revs string) {
	t.Helper()
	commits := strings.Fields(mustRun(t, dir, "git", "rev-list", revs))
	if len(commits) == 0 {
		t.Fatalf("no commits in %s", revs)
	}
	for _, c := range commits {
		if r := run(t, dir, nil, "git", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", c); r.code != 0 {
			t.Errorf("commit %s (%s) is not signed: %s", c[:7], strings.TrimSpace(mustRun(t, dir, "git", "log", "-1", "--format=%s", c)), strings.TrimSpace(r.stderr))
		}
	}
}

// With commit.gpgSign on every commit a run puts in the person's history
// is signed - the parallel run's merge commits too, which it writes with
// git commit-tree (which does not follow commit.gpgSign): before, they
// were not, and a server that requires signed commits refused main.
func TestParallelRunSignsItsMerges(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 3, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
sleep 0.3
`)
	_, allowed := sshSigning(t, dir, "")
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--workers", "3")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if merges := mustRun(t, dir, "git", "rev-list", "--merges", head+"..main"); merges == "" {
		t.Fatalf("no merge commit to look at:\n%s", mustRun(t, dir, "git", "log", "--graph", "--oneline", "main"))
	}
	verifySigned(t, dir, allowed, head+"..main")
}

// A shared run (--remote) lands each story on the server's main in a
// landing commit it writes itself: with commit.gpgSign on, signed like the
// story's own commit. Before, the landings were not.
func TestFleetSignsItsLandings(t *testing.T) {
	f := newFleet(t, "daemon", 2)
	clone := filepath.Join(f.dir, "m1")
	gitserver.Clone(t, f.srv.URL("r.git"), clone)
	_, allowed := sshSigning(t, clone, "")
	if code := waitLong(t, f.machine("m1", nil, "--workers", "2"), 2*time.Minute); code != 0 {
		t.Fatalf("the machine exited %d", code)
	}
	if n := f.landings(); n["US-1"] != 1 || n["US-2"] != 1 {
		t.Fatalf("landings: %v", n)
	}
	seed := f.git("rev-list", "--max-parents=0", "main")
	verifySigned(t, f.bare, allowed, seed+"..main")
}

// The same with gpg: a key whose passphrase gpg-agent does not hold fails
// the run up front, fast (never a pinentry waiting on the terminal, which
// GPG_TTY would point gpg at); once the agent holds it, every commit of
// the run is signed.
func TestGPGSigningUnattended(t *testing.T) {
	gpg := needTool(t, "gpg", "gnupg")
	needTool(t, "gpgconf", "gnupg")
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
	home, err := os.MkdirTemp("", "wiggum-gnupg-") // short: gpg-agent's socket path
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"GNUPGHOME=" + home, "MARKS=" + marks}
	t.Cleanup(func() {
		_ = run(t, dir, env, "gpgconf", "--kill", "gpg-agent")
		os.RemoveAll(home)
	})
	if r := run(t, dir, env, gpg, "--batch", "--pinentry-mode", "loopback", "--passphrase", "correct horse", "--quick-gen-key", "Test <test@example.com>", "ed25519", "sign", "never"); r.code != 0 {
		t.Fatalf("gpg --quick-gen-key: %s", r.stderr)
	}
	mustRun(t, dir, "git", "config", "commit.gpgSign", "true")
	mustRun(t, dir, "git", "config", "user.signingKey", "test@example.com")
	// The key is gpg's, but its passphrase is in no agent's cache: the
	// agent that gpg started fresh has nobody to ask.
	_ = run(t, dir, env, "gpgconf", "--kill", "gpg-agent")
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent}
	r := wiggum(t, dir, append(env, "GPG_TTY=/dev/pts/4242"), args...)
	if r.code != 1 || !strings.Contains(r.stderr, "gpg failed to sign the data") || !strings.Contains(r.stderr, "Nothing changed") {
		t.Fatalf("exit %d, want 1: signing cannot work unattended\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); len(n) != 0 {
		t.Fatalf("an agent ran: %v", n)
	}
	// The person signs once; gpg-agent keeps the passphrase.
	sign := exec.Command(gpg, "--batch", "--pinentry-mode", "loopback", "--passphrase", "correct horse", "--clearsign")
	sign.Env = append(append([]string{}, baseEnv...), env...)
	sign.Stdin = strings.NewReader("once\n")
	if out, err := sign.CombinedOutput(); err != nil {
		t.Fatalf("gpg --clearsign: %v\n%s", err, out)
	}
	r = wiggum(t, dir, append(env, "GPG_TTY=/dev/pts/4242"), args...)
	if r.code != 0 {
		t.Fatalf("exit %d with the passphrase in gpg-agent\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range strings.Fields(mustRun(t, dir, "git", "rev-list", head+"..main")) {
		if v := run(t, dir, env, "git", "verify-commit", c); v.code != 0 {
			t.Errorf("commit %s is not signed: %s", c[:7], v.stderr)
		}
	}
}

// Signing that stops between a parallel story's landing and the commit of
// its tick (the key taken from its agent by then; here by the main tree's
// pre-commit hook, once): the run ended with the ticks uncommitted, and
// the next run refused the plan as the person's change (exit 2), until
// the person committed it. Now the run stops open, saying that the story
// landed and signing failed for its tick; with the key back, the resume
// commits the ticks - signed - and no agent runs again.
func TestSigningLostBeforeTickKeepsTheLanding(t *testing.T) {
	needTool(t, "ssh-agent", "openssh-client")
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
	key, allowed, env := signingAgent(t, dir, marks)
	// The first commit in the main tree - a tick: a parallel run's merges
	// are written without hooks - takes the key away before it is signed.
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	writeFile(t, hook, `#!/bin/sh
if [ "$(git rev-parse --show-toplevel)" = "`+dir+`" ] && [ ! -e "$MARKS/key-gone" ]; then
  ssh-add -q -D 2>/dev/null; touch "$MARKS/key-gone"
fi
exit 0
`)
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "0", "--workers", "2"}
	r := wiggum(t, dir, env, args...)
	if r.code != 1 || !regexp.MustCompile(`US-[12] landed \([0-9a-f]{12}\), but git would not commit its tick in plan.md: signing failed \(commit.gpgSign\)`).MatchString(r.stderr) {
		t.Fatalf("exit %d, want 1: a landed story's tick could not be signed\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !exists(filepath.Join(marks, "key-gone")) {
		t.Fatal("the pre-commit hook never ran in the main tree")
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); st != " M plan.md\n" {
		t.Errorf("the tree after the stop:\n%s", st)
	}
	// Before, this run was refused, exit 2: the plan's ticks were the
	// person's uncommitted change.
	if r := wiggum(t, dir, env, args...); r.code != 1 || !strings.Contains(r.stderr, "signing failed") {
		t.Fatalf("run again with the key still gone: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	keyBackRunsOnce(t, dir, marks, key, env, args)
	if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
		t.Errorf("the tree after the resume:\n%s", st)
	}
	if plan := mustRun(t, dir, "git", "show", "main:plan.md"); strings.Count(plan, "- [x]") != 2 {
		t.Errorf("the committed plan:\n%s", plan)
	}
	for _, f := range []string{"work-US-1.txt", "work-US-2.txt"} {
		mustRun(t, dir, "git", "cat-file", "-e", "main:"+f)
	}
	verifySigned(t, dir, allowed, head+"..main")
}
