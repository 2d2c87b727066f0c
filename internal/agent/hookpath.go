package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// HookBinDir is where, under the runtime directory, OnPath keeps its link
// to the running wiggum.
const HookBinDir = "bin"

// OnPath makes `wiggum` on this process's PATH - and so on the PATH of
// every process it starts: the agent, the hooks the agent runs, git and
// git's hooks - resolve to the running binary.
//
// The agents run wiggum's hooks as the command `wiggum hook AGENT`, which
// their shell looks up on PATH. Where that finds nothing, every hook fails
// with "command not found", which Claude Code, Codex and Gemini CLI treat
// as a non-blocking hook error: the agent works on with no guard and no
// rollback, and in headless mode nothing says so. Where it finds another
// wiggum (an older install, say), the hooks run that one. So, unless PATH
// already finds this binary, OnPath links runtimeDir/bin/wiggum to it and
// puts that directory on PATH: last when PATH has no wiggum, so that no
// lookup of anything else can end there; first when it must come before
// another wiggum. The directory holds nothing but the link (the guard
// denies an agent's writes there, as everywhere in wiggum's state; wiggum's
// own git is looked up before any agent runs). note tells the user what
// was done and why, and is "" when nothing was needed.
func OnPath(runtimeDir string) (note string, err error) {
	w, err := Which()
	if err != nil || w.Same {
		return "", err
	}
	dir := filepath.Join(runtimeDir, HookBinDir)
	if err := linkSelf(dir, "wiggum", w.Self); err != nil {
		return "", err
	}
	path := os.Getenv("PATH") + string(os.PathListSeparator) + dir
	note = fmt.Sprintf("wiggum is not on PATH, so an agent could not run its hooks ('wiggum hook ...'); "+
		"for this run %s (a link to %s) comes last on PATH. Agents started outside wiggum need %s on PATH",
		dir, w.Self, filepath.Dir(w.Self))
	if w.Found != "" {
		path = dir + string(os.PathListSeparator) + os.Getenv("PATH")
		note = fmt.Sprintf("the wiggum on PATH (%s) is not this one (%s); for this run the agent, its hooks and git's "+
			"run this one (%s, a link to it, comes first on PATH)", w.Found, w.Self, dir)
	}
	return note, os.Setenv("PATH", path)
}

// PathLookup is what `wiggum` on PATH is, next to the running binary.
type PathLookup struct {
	Self  string `json:"self"`  // the running binary, symlinks resolved
	Found string `json:"found"` // what PATH finds for wiggum; "" when nothing
	Same  bool   `json:"same"`  // Found is Self
}

// Which looks `wiggum` up on PATH as an agent's shell would.
func Which() (PathLookup, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return PathLookup{}, fmt.Errorf("find the running wiggum binary: %w", err)
	}
	w := PathLookup{Self: self}
	// A wiggum found through a relative PATH entry (exec.ErrDot) is
	// found only from one directory: treat it as not found.
	if found, err := exec.LookPath("wiggum"); err == nil {
		w.Found, w.Same = found, sameFile(found, self)
	}
	return w, nil
}

// HookNote says what an agent started outside `wiggum run` would run for
// the hooks install writes, when that is not this binary; "" when it is.
func HookNote() string {
	w, err := Which()
	if err != nil {
		return ""
	}
	return w.Note()
}

// Note says, for install and status, what an agent started outside
// `wiggum run` and `wiggum lock` runs for 'wiggum hook ...' when that is
// not this binary; "" when it is (or this binary is unknown).
func (w PathLookup) Note() string {
	switch {
	case w.Self == "" || w.Same:
		return ""
	case w.Found == "":
		return fmt.Sprintf("wiggum is not on PATH: an agent runs these hooks as 'wiggum hook ...', fails to find it, "+
			"and works on without them (Claude Code, Codex and Gemini CLI count that as a non-blocking hook error). "+
			"Put %s on PATH ('wiggum run' and 'wiggum lock' do so for their own agents)", filepath.Dir(w.Self))
	default:
		return fmt.Sprintf("the wiggum on PATH (%s) is not this one (%s): agents will run that one for these hooks "+
			"('wiggum run' and 'wiggum lock' put this one first for their own agents)", w.Found, w.Self)
	}
}

// sameFile reports whether two paths name the same file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// GitShimDir is where, under the runtime directory, the run keeps its link
// named git to the running wiggum: the agent's git (hooks.GitShim).
const GitShimDir = "gitbin"

// GitShim links runtimeDir/gitbin/git to the running wiggum and returns
// the directory, for the agent's PATH: there wiggum refuses a push the
// session forbids even where git runs no hooks (git push --no-verify,
// Gemini CLI's shell), and execs the real git for everything else.
func GitShim(runtimeDir string) (string, error) {
	w, err := Which()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(runtimeDir, GitShimDir)
	for _, name := range []string{"git", "git-remote-" + git.NoPushTransport} {
		if err := linkSelf(dir, name, w.Self); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// linkSelf makes dir/name a symbolic link to self, the running wiggum.
func linkSelf(dir, name, self string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := renameio.Symlink(self, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("link %s to %s: %w", filepath.Join(dir, name), self, err)
	}
	return nil
}
