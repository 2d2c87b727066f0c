package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// GitHookMarker is the fingerprint line in every git hook wiggum installs;
// a post-commit hook carrying it means the commit journal is on.
const GitHookMarker = "# wiggum-managed-hook: calls 'wiggum hook git'; 'wiggum uninstall --git' removes it"

// JournalEntry records one commit and the session that made it.
type JournalEntry struct {
	SHA     string    `json:"sha"`
	Session string    `json:"session,omitempty"` // "" when made outside any session
	Branch  string    `json:"branch,omitempty"`
	Time    time.Time `json:"time"`
}

// JournalOn reports whether wiggum's post-commit hook is installed, so every
// commit is journaled and rollback can prove who made what.
func (s *State) JournalOn() bool {
	data, err := statefile.ReadFile(filepath.Join(s.Repo.HooksDir, "post-commit"))
	return err == nil && bytes.Contains(data, []byte(GitHookMarker))
}

// RecordCommit appends HEAD and the committing session (WIGGUM_SESSION) to
// the journal. It is what the post-commit hook runs.
//
// In a working tree where wiggum has never run (no .ralph directory: no
// lock was ever taken, no checkpoint made there) it records nothing and
// creates nothing: a rollback only discards commits made since a
// checkpoint, which takes the lock first, so no commit made before is ever
// asked about. Hooks installed into a core.hooksPath that every repository
// on the machine shares (a global one, with install --force) would
// otherwise leave a .ralph directory in each repository a commit is made
// in.
func (s *State) RecordCommit(ctx context.Context) error {
	if !s.Used() {
		return nil
	}
	head, err := s.Repo.Head(ctx)
	if err != nil || head == "" {
		return fmt.Errorf("journal: read HEAD: %v", err)
	}
	return s.RecordCommits(ctx, []string{head})
}

// RecordMerge journals the merge commit a git merge (or git pull) just
// made on HEAD: git runs post-merge there, never post-commit, and a
// session's merge commit missing from the journal made its rollback refuse
// (exit 4), saying the hook was not running. A fast-forward makes no
// commit - the commits it brings in are other work's - and a merge whose
// first parent is not the HEAD before it (ORIG_HEAD) is not this merge's:
// neither is journaled. It is what the post-merge hook runs; like
// RecordCommit it records nothing where wiggum has never run.
func (s *State) RecordMerge(ctx context.Context) error {
	if !s.Used() {
		return nil
	}
	out, err := s.Repo.Line(ctx, "rev-list", "--parents", "-n", "1", "HEAD")
	if err != nil {
		return fmt.Errorf("journal: read HEAD: %v", err)
	}
	f := strings.Fields(out)
	if len(f) < 3 {
		return nil // not a merge commit: a fast-forward
	}
	orig, err := os.ReadFile(filepath.Join(s.Repo.GitDir, "ORIG_HEAD"))
	if err != nil || strings.TrimSpace(string(orig)) != f[1] {
		return nil
	}
	return s.RecordCommits(ctx, f[:1])
}

// RecordCommits appends commits, made on HEAD's branch by the committing
// session (WIGGUM_SESSION), to the journal: what the post-commit hook
// would have recorded for each, for a git that ran no hooks.
func (s *State) RecordCommits(ctx context.Context, commits []string) error {
	branch, _ := s.Repo.Branch(ctx)
	var lines []byte
	for _, c := range commits {
		line, err := json.Marshal(JournalEntry{SHA: c, Session: os.Getenv(layout.SessionEnv), Branch: branch, Time: time.Now().UTC()})
		if err != nil {
			return err
		}
		if len(lines) > 0 {
			lines = append(lines, '\n')
		}
		lines = append(lines, line...)
	}
	if len(lines) == 0 {
		return nil
	}
	path, err := s.Runtime(layout.JournalFile)
	if err != nil {
		return err
	}
	if err := statefile.AppendLine(path, lines); err != nil {
		return fmt.Errorf("journal: append: %w", err)
	}
	return nil
}

// Journal reads every entry, oldest first. A damaged line is a
// *CorruptError: a journal that cannot be read proves nothing.
func (s *State) Journal() ([]JournalEntry, error) {
	return statefile.ReadJSONLines(s.RuntimePath(layout.JournalFile), func(e *JournalEntry) error {
		if !shaRE().MatchString(e.SHA) {
			return fmt.Errorf("bad commit id %q", e.SHA)
		}
		return nil
	})
}

func describeSession(tok string) string {
	if tok == "" {
		return "outside any wiggum session"
	}
	return "by another wiggum session (" + strings.TrimSpace(tok[:min(8, len(tok))]) + "…)"
}

// JournalEntries counts the journal's entries for a status line without
// decoding them all: one streaming pass over the file (a few KiB of memory
// however long the journal has grown; a month of commits is megabytes),
// and the last entry decoded, so a torn or damaged end is reported as
// Journal reports it. A rollback still decodes every entry it relies on.
func (s *State) JournalEntries() (int, error) {
	path := s.RuntimePath(layout.JournalFile)
	f, err := statefile.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n, lastAt := 0, 0
	var last []byte
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		n++
		last, lastAt = append(last[:0], sc.Bytes()...), line
	}
	if err := sc.Err(); err != nil {
		return 0, &statefile.CorruptError{Path: path, Err: err}
	}
	if n > 0 {
		var e JournalEntry
		err := json.Unmarshal(last, &e)
		if err == nil && !shaRE().MatchString(e.SHA) {
			err = fmt.Errorf("bad commit id %q", e.SHA)
		}
		if err != nil {
			return 0, &statefile.CorruptError{Path: path, Err: fmt.Errorf("line %d: %w", lastAt, err)}
		}
	}
	return n, nil
}
