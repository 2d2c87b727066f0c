package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/wiggum-dev/wiggum/checkpoint"
	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
)

// A hook call must cost about what starting a Go binary costs, so nothing
// here spawns git: the working tree and its branch come from internal/git's
// file reads, the session from the holder record and a lock probe.

// findRoot is the working tree containing dir, found without git.
func findRoot(dir string) string { return gitfiles.FindRoot(dir) }

// branches returns the checked-out branch ("" when detached or unknown)
// and the remote's default branch ("" when unknown), for the guard's
// protected-branch rule.
func branches(root string) (current, defaultBranch string) {
	gitDir, commonDir := gitfiles.Dirs(root)
	if gitDir == "" {
		return "", ""
	}
	return gitfiles.HeadBranch(gitDir), gitfiles.RemoteDefaultBranch(commonDir)
}

// sessionInfo says whether a wiggum session holds the working tree's agent
// lock, and whether this process is part of it.
type sessionInfo struct {
	Active  bool   // a live wiggum holder has the lock
	Mine    bool   // WIGGUM_SESSION matches the holder's token
	Session string // the holder's token
}

// probeSession reads the holder record and probes the lock without
// spawning anything. The record is written before and removed before the
// flock is released, so a missing record means no wiggum session; the probe
// tells a live holder from a record left by a SIGKILLed one.
func probeSession(root string) sessionInfo {
	if root == "" {
		return sessionInfo{}
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(checkpoint.HolderFile)))
	if err != nil {
		return sessionInfo{}
	}
	var h checkpoint.Holder
	if json.Unmarshal(data, &h) != nil || h.Session == "" {
		return sessionInfo{}
	}
	if !lockHeld(filepath.Join(root, filepath.FromSlash(checkpoint.LockFile))) {
		return sessionInfo{}
	}
	tok := os.Getenv(checkpoint.SessionEnv)
	return sessionInfo{Active: true, Mine: tok != "" && tok == h.Session, Session: h.Session}
}

// lockHeld reports whether someone holds the flock on path, without ever
// taking it (see checkpoint.ProbeFile).
func lockHeld(path string) bool {
	held, err := checkpoint.ProbeFile(path)
	return err == nil && held
}
