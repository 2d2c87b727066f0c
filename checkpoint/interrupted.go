package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// A recover or a rollback killed while it writes the working tree (the
// OOM killer, a reboot, ^\) leaves the tree half restored and its own
// index.lock, which blocks every git command that writes the index; before,
// nothing said so, and wiggum status showed an ordinary state. Each now
// leaves a mark in the git directory from the moment it moves HEAD or
// writes a file until it is done, naming what it restored and the backup
// holding the state before it; the next wiggum command reports it
// (Interrupted), and the next recover or rollback that ends clears it.

// restoreMarkName is the mark's file in the git directory.
const restoreMarkName = "wiggum-restore.json"

// RestoreMark is a restore of the working tree under way, or interrupted.
type RestoreMark struct {
	// Op is "recover" or "rollback"; Target what it restores (a backup, or
	// the checkpoint's commit); Before the backup of the state before it.
	Op      string    `json:"op"`
	Target  string    `json:"target"`
	Before  string    `json:"before"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// IndexLock is the index.lock the interrupted restore left, when it
	// is still there.
	IndexLock string `json:"index_lock,omitempty"`
}

func (s *State) restoreMarkPath() string { return filepath.Join(s.Repo.GitDir, restoreMarkName) }

// markRestore records that op of target, the state before it saved in
// before, starts writing the tree.
func (s *State) markRestore(op, target, before string) error {
	m := RestoreMark{Op: op, Target: target, Before: before, PID: os.Getpid(), Started: time.Now().UTC()}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := s.restoreMarkPath() + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("%s: record the restore under way: %w", op, err)
	}
	if err := os.Rename(tmp, s.restoreMarkPath()); err != nil {
		return fmt.Errorf("%s: record the restore under way: %w", op, err)
	}
	return nil
}

// unmarkRestore clears the mark: the tree is whole again.
func (s *State) unmarkRestore() { _ = os.Remove(s.restoreMarkPath()) }

// Interrupted returns the restore a killed wiggum left half done, or nil:
// a mark whose process no longer runs (a live one is a restore at work).
func (s *State) Interrupted() (*RestoreMark, error) {
	data, err := os.ReadFile(s.restoreMarkPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m RestoreMark
	if err := json.Unmarshal(data, &m); err != nil || m.Op == "" {
		return nil, &CorruptError{Path: s.restoreMarkPath(), Err: fmt.Errorf("not a restore mark: %q", strings.TrimSpace(string(data)))}
	}
	if m.PID != os.Getpid() && s.atWork(m) {
		return nil, nil
	}
	if lock := filepath.Join(s.Repo.GitDir, "index.lock"); fileExists(lock) {
		m.IndexLock = lock
	}
	return &m, nil
}

// atWork reports whether the restore m marks is still under way. Every
// restore holds the tree's agent lock, or runs in the session of the
// wiggum that does: it is at work while a live wiggum holds that lock
// (LiveHolder, wiggum status's test), since before the mark was made, and
// its own process lives. Its pid alone proves nothing: after a reboot it
// may name any process.
func (s *State) atWork(m RestoreMark) bool {
	h, err := s.LiveHolder()
	if err != nil {
		return layout.PIDAlive(m.PID) // the lock cannot be read: the pid is all there is
	}
	return h != nil && !m.Started.Before(h.Started) && layout.PIDAlive(m.PID)
}

// ReportInterrupted tells warn of a restore a killed wiggum left half done
// - the tree half restored, the backup holding the state before it - and
// removes the index.lock it left, when no git could hold it
// (git.ClearStaleLock): git refuses every index write while it is there.
// Every command that acts on the tree calls it before it acts; wiggum
// status shows the same (Interrupted). It is one stat when there is none.
func (s *State) ReportInterrupted(warn func(string)) {
	m, err := s.Interrupted()
	if err != nil {
		warn(err.Error())
		return
	}
	if m == nil {
		return
	}
	if m.IndexLock != "" && git.ClearStaleLock(m.IndexLock, s.Repo.Root, s.Repo.GitDir) {
		if git.OnStaleLock == nil { // else it said so
			warn("removed " + m.IndexLock + ", left by the interrupted " + m.Op)
		}
		m.IndexLock = ""
	}
	warn(m.String())
}

// String says what happened and what to do.
func (m *RestoreMark) String() string {
	what := "a wiggum recover of " + strings.TrimPrefix(m.Target, BackupPrefix)
	finish := "wiggum recover " + strings.TrimPrefix(m.Target, BackupPrefix)
	if m.Op == "rollback" {
		what, finish = "a wiggum rollback to "+short(m.Target), "wiggum rollback"
	}
	out := fmt.Sprintf("%s (pid %d, %s) was interrupted: the working tree is half restored; the state before it is in %s (wiggum recover %s to go back, %s to finish)",
		what, m.PID, m.Started.Local().Format("2006-01-02 15:04:05"), m.Before, strings.TrimPrefix(m.Before, BackupPrefix), finish)
	if m.IndexLock != "" {
		out += fmt.Sprintf("; it left %s, which blocks git until a wiggum command or you remove it", m.IndexLock)
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
