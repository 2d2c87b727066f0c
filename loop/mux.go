package loop

import (
	"os"
	"path/filepath"
	"strconv"
)

// The agents' terminal multiplexers (tmux, screen, zellij) keep their
// sockets in a directory of the run's own (executor.ownMultiplexers).
// It is not under the repository: a Unix socket's path holds 107 bytes
// at most (103 on macOS), and tmux's $TMUX_TMPDIR/tmux-UID/default under
// a repository at a deep path passed that - the agent's own tmux failed
// to start. It is a short one instead, made for the run under
// $XDG_RUNTIME_DIR (per user, private, emptied at logout) or, without
// one, the system's temporary directory, private (0700) as screen wants
// it, one subdirectory per executor (a parallel run's agents do not meet
// in one server), and removed when the run ends. A run killed with
// SIGKILL leaves it behind: an empty directory, or sockets no server
// listens on any more (the agents' servers die with the run's process
// groups), which the system's cleaning of its temporary directory - or
// the logout - takes away.

// muxPattern names the run's socket directory.
const muxPattern = "wiggum-agent-*"

// agentMuxDir makes a new private directory for one executor's agents'
// multiplexer sockets, in the run's directory for them, made first (or
// again, when an agent removed it).
func (r *run) agentMuxDir() (string, error) {
	r.muxMu.Lock()
	defer r.muxMu.Unlock()
	if r.muxDir != "" {
		if fi, err := os.Lstat(r.muxDir); err != nil || !fi.IsDir() {
			r.muxDir = ""
		}
	}
	if r.muxDir == "" {
		dir, err := newMuxDir()
		if err != nil {
			return "", err
		}
		r.muxDir = dir
		r.muxDirs = append(r.muxDirs, dir)
	}
	r.muxN++
	dir := filepath.Join(r.muxDir, strconv.Itoa(r.muxN))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o700) // whatever the umask
}

// newMuxDir makes the run's directory for its agents' sockets: under
// $XDG_RUNTIME_DIR when it is set and one can be made there, else in the
// system's temporary directory. os.MkdirTemp makes it 0700, and never
// takes one that exists (someone else's).
func newMuxDir() (string, error) {
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		if dir, err := os.MkdirTemp(xdg, muxPattern); err == nil {
			return dir, os.Chmod(dir, 0o700)
		}
	}
	dir, err := os.MkdirTemp("", muxPattern)
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o700)
}

// removeMuxDirs removes the run's socket directories, once no agent
// runs.
func (r *run) removeMuxDirs() {
	r.muxMu.Lock()
	defer r.muxMu.Unlock()
	for _, d := range r.muxDirs {
		_ = os.RemoveAll(d)
	}
	r.muxDirs, r.muxDir = nil, ""
}
