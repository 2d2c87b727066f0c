package git

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Signing. With commit.gpgSign on, git signs every commit `git commit`
// makes, through gpg, ssh-keygen (gpg.format ssh) or the program the user
// set - and the program asks for a passphrase when its key is not loaded
// in an agent. Asked on the terminal wiggum runs in, the question is
// hidden under wiggum's own status line and waits for ever: an unattended
// run stalls at its first commit. So the git commands that may sign run
// unattended (RunUnattended), and a run checks up front that signing
// works so (SignProbe).

// RunUnattended runs git as RunEnv does, but with no controlling terminal
// (a session of its own) and no way to a graphical prompt: a signing
// program or a hook that would ask the person something fails at once
// instead of waiting for an answer nobody will type. gpg is not given the
// terminal's name (GPG_TTY), so gpg-agent cannot put its passphrase
// dialog there; ssh-keygen is told never to use an askpass program.
func (r *Repo) RunUnattended(ctx context.Context, env []string, stdin []byte, args ...string) (string, error) {
	return whileIndexLocked(ctx, r.Root, args, func() (string, error) {
		cmd := command(ctx, r.Root, r.env(env), args...)
		cmd.Env = UnattendedEnv(cmd.Env)
		detach(cmd)
		// What git starts (a hook, a signing program) is in its session
		// and process group: ctx ends them all, not git alone, and a
		// hook's child that keeps git's output open does not keep this
		// waiting.
		cmd.Cancel = func() error { return stopGroup(cmd.Process) }
		cmd.WaitDelay = 5 * time.Second
		out, err := runCmd(cmd, stdin, args)
		return string(out), err
	})
}

// UnattendedEnv is env for a process that must never put a question to
// the person: no GPG_TTY, SSH_ASKPASS_REQUIRE=never, and every editor
// variable git and other tools read set to true (an editor that exits at
// once, leaving what it was given): a git commit with no -m then stops
// on its empty message, and a git revert, commit --amend, merge or
// rebase --continue takes git's own message, where vi waited for ever.
func UnattendedEnv(env []string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "GPG_TTY" || slices.Contains(unattendedVars, name)
	})
	for _, name := range unattendedVars {
		v := "true"
		if name == "SSH_ASKPASS_REQUIRE" {
			v = "never"
		}
		env = append(env, name+"="+v)
	}
	return env
}

var unattendedVars = []string{"SSH_ASKPASS_REQUIRE", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL"}

// SignsCommits reports whether git signs the commits made here
// (commit.gpgSign, from every config file and GIT_CONFIG_* the process
// has).
func (r *Repo) SignsCommits(ctx context.Context) (bool, error) {
	v, err := r.ConfigValue(ctx, "commit.gpgSign", "--type=bool")
	return v == "true", err
}

// SignProbe signs a commit of the empty tree (written, never referenced)
// as git would sign a commit here, unattended. Its error carries what the
// signing program said.
func (r *Repo) SignProbe(ctx context.Context) error {
	tree, err := r.Line(ctx, "mktree")
	if err != nil {
		return err
	}
	_, err = r.RunUnattended(ctx, nil, []byte("wiggum: can commits be signed here?\n"), "commit-tree", "-S", tree, "-F", "-")
	return err
}

// CommitTree writes a commit of tree with parents and message and returns
// its id. When sign is set it is signed, as git commit would sign it
// (commit-tree does not follow commit.gpgSign), and written unattended.
func (r *Repo) CommitTree(ctx context.Context, tree string, parents []string, message string, sign bool) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-")
	var out string
	var err error
	if sign {
		args = slices.Insert(args, 1, "-S")
		out, err = r.RunUnattended(ctx, nil, []byte(message), args...)
	} else {
		out, err = r.RunEnv(ctx, nil, []byte(message), args...)
	}
	return strings.TrimSpace(out), err
}
