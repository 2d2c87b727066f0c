package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
)

// A hook call must cost about what starting a Go binary costs, so nothing
// here spawns git: the working tree, its branch and the session are found by
// reading a few small files.

// findRoot walks up from dir to the directory holding .git (a directory, or
// a file in linked worktrees); "" when there is none.
func findRoot(dir string) string {
	dir = filepath.Clean(dir)
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// gitDirs returns the worktree's git dir and the common dir.
func gitDirs(root string) (gitDir, commonDir string) {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", ""
	}
	gitDir = dotgit
	if !fi.IsDir() {
		data, err := os.ReadFile(dotgit)
		if err != nil {
			return "", ""
		}
		p, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
		if !ok {
			return "", ""
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		gitDir = p
	}
	commonDir = gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = filepath.Clean(c)
	}
	return gitDir, commonDir
}

// branches returns the checked-out branch ("" when detached or unknown)
// and the remote's default branch ("" when unknown), for the guard's
// protected-branch rule.
func branches(root string) (current, defaultBranch string) {
	gitDir, commonDir := gitDirs(root)
	if gitDir == "" {
		return "", ""
	}
	if data, err := os.ReadFile(filepath.Join(gitDir, "HEAD")); err == nil {
		current = strings.TrimPrefix(strings.TrimSpace(string(data)), "ref: refs/heads/")
		if strings.HasPrefix(current, "ref: ") || len(current) == 40 || len(current) == 64 {
			current = ""
		}
	}
	if data, err := os.ReadFile(filepath.Join(commonDir, "refs", "remotes", "origin", "HEAD")); err == nil {
		if def, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: refs/remotes/origin/"); ok {
			defaultBranch = def
		}
	}
	return current, defaultBranch
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
