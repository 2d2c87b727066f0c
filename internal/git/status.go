package git

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

// Status is what one `git status` says about a working tree. It is the only
// reading of `git status` in wiggum, so "dirty" has one meaning everywhere:
// anything staged, changed in the working tree (submodules included) or
// untracked and not ignored.
type Status struct {
	Head   string // "" with no commits yet
	Branch string // full ref; "" when detached
	// Changes are the tracked paths that differ from HEAD in the index or
	// the working tree, and unmerged paths.
	Changes []Change
	// Untracked lists the untracked, not ignored files, relative to the root.
	Untracked []string
}

// Change is one tracked path that differs from HEAD.
type Change struct {
	Path     string
	Staged   bool // the index differs from HEAD
	Unstaged bool // the working tree differs from the index
	Unmerged bool // a conflict is recorded for the path
	// Submodule: the path is a submodule (its changes are git's to read).
	// SubCommit: its checkout is at another commit than the index
	// records; SubModified and SubUntracked: its checkout has changed
	// tracked files, or new untracked ones, of its own.
	Submodule, SubCommit, SubModified, SubUntracked bool
	// HeadMode and WorktreeMode are the path's octal modes in HEAD and in
	// the working tree as git sees them (core.fileMode applied); "000000"
	// when absent there. HeadOID is its object in HEAD. Empty for an
	// unmerged path.
	HeadMode, WorktreeMode, HeadOID string
	// AssumeUnchanged and SkipWorktree: the index flags the path so
	// (`git update-index --assume-unchanged`, `--skip-worktree`) and git
	// status does not look at its file. Set on the changes a checkpoint
	// reads from such files itself, whose HeadMode and HeadOID are then
	// the index entry's.
	AssumeUnchanged, SkipWorktree bool
}

// Dirty reports whether anything is staged, changed or untracked.
func (s *Status) Dirty() bool { return len(s.Changes) > 0 || len(s.Untracked) > 0 }

// DirtyBesidesSubmodules is Dirty leaving out submodules whose changes are
// their own - new commits, changed or new files inside them - and not
// staged here: what a backup of this tree would hold beyond them.
func (s *Status) DirtyBesidesSubmodules() bool {
	if len(s.Untracked) > 0 {
		return true
	}
	for _, c := range s.Changes {
		if !c.Submodule || c.Staged || c.Unmerged {
			return true
		}
	}
	return false
}

// UncommittedInSubmodules lists the submodules whose checkouts have
// changed or new files of their own: work no commit here can hold until
// it is committed in the submodule.
func (s *Status) UncommittedInSubmodules() []string {
	var paths []string
	for _, c := range s.Changes {
		if c.SubModified || c.SubUntracked {
			paths = append(paths, c.Path)
		}
	}
	return paths
}

// ChangedSubmodules lists the submodules the status sees changed.
func (s *Status) ChangedSubmodules() []string {
	var paths []string
	for _, c := range s.Changes {
		if c.Submodule {
			paths = append(paths, c.Path)
		}
	}
	return paths
}

// Paths lists every changed, staged, unmerged or untracked path.
func (s *Status) Paths() []string {
	out := make([]string, 0, len(s.Changes)+len(s.Untracked))
	for _, c := range s.Changes {
		out = append(out, c.Path)
	}
	return append(out, s.Untracked...)
}

// statusArgs asks for everything Status holds in a stable, NUL-separated
// form: renames are reported as a deletion and an addition, submodules
// always count, and no time is spent counting commits ahead of upstream.
var statusArgs = []string{"status", "--porcelain=v2", "-z", "--branch", "--no-ahead-behind",
	"--untracked-files=all", "--ignore-submodules=none", "--no-renames"}

// Status reads HEAD, the branch and every difference from HEAD with a
// single `git status`.
func (r *Repo) Status(ctx context.Context) (*Status, error) {
	return r.StartStatus(ctx)()
}

// StartStatus starts Status's git and returns what waits for its answer,
// so that the caller can start more work while git scans the tree.
func (r *Repo) StartStatus(ctx context.Context) func() (*Status, error) {
	return r.startStatus(ctx, nil)
}

func (r *Repo) startStatus(ctx context.Context, env []string) func() (*Status, error) {
	s := r.Start(ctx, env, statusArgs...)
	return func() (*Status, error) {
		out, err := s.Finish(nil)
		if err != nil {
			return nil, err
		}
		st, err := ParseStatus(out)
		if err != nil {
			return nil, err
		}
		st.Untracked = slices.DeleteFunc(st.Untracked, IsState)
		return st, nil
	}
}

// IsState reports whether a path is wiggum's own session state
// (layout.StatePaths). .git/info/exclude hides it from git, but an agent can
// empty that file, and a .gitignore can un-ignore it: the state is still
// never the tree's content - never in a checkpoint, a backup or a commit,
// never a new file for a rollback to remove.
func IsState(path string) bool {
	for _, p := range layout.StatePaths() {
		if path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// StartRefreshStatus is StartStatus for a status that also lets git write
// back the stat data it refreshed (as a plain `git status` does when it
// can take the index lock at once; it never waits for it). Files that were
// touched without being changed are then hashed once, not by every later
// read.
func (r *Repo) StartRefreshStatus(ctx context.Context) func() (*Status, error) {
	return r.startStatus(ctx, []string{"GIT_OPTIONAL_LOCKS=1"})
}

// ParseStatus reads the output of `git status --porcelain=v2 -z --branch`.
// A record it does not understand is an error, never "clean".
func ParseStatus(out string) (*Status, error) {
	s := &Status{}
	recs := strings.Split(out, "\x00")
	for i := 0; i < len(recs); i++ {
		e := recs[i]
		switch {
		case e == "":
		case strings.HasPrefix(e, "# branch.oid "):
			if oid := strings.TrimPrefix(e, "# branch.oid "); oid != "(initial)" {
				s.Head = oid
			}
		case strings.HasPrefix(e, "# branch.head "):
			if name := strings.TrimPrefix(e, "# branch.head "); name != "(detached)" {
				s.Branch = "refs/heads/" + name
			}
		case strings.HasPrefix(e, "# "):
		case strings.HasPrefix(e, "? "):
			// A nested repository is named with a trailing slash.
			if !TreePath(strings.TrimSuffix(e[2:], "/")) {
				return nil, outsideTree(e[2:])
			}
			s.Untracked = append(s.Untracked, e[2:])
		case strings.HasPrefix(e, "1 "), strings.HasPrefix(e, "2 "), strings.HasPrefix(e, "u "):
			// 1 XY sub mH mI mW hH hI path
			// 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			// u XY sub m1 m2 m3 mW h1 h2 h3 path
			fields := map[byte]int{'1': 8, '2': 9, 'u': 10}[e[0]]
			f := strings.SplitN(e, " ", fields+1)
			if len(f) != fields+1 || len(f[1]) != 2 || f[fields] == "" {
				return nil, fmt.Errorf("git status: unexpected record %q", e)
			}
			if !TreePath(f[fields]) {
				return nil, outsideTree(f[fields])
			}
			c := Change{Path: f[fields], Unmerged: e[0] == 'u', Submodule: f[2][0] == 'S'}
			if c.Submodule && len(f[2]) == 4 {
				// S<c><m><u>: each a letter when so, "." when not.
				c.SubCommit, c.SubModified, c.SubUntracked = f[2][1] == 'C', f[2][2] == 'M', f[2][3] == 'U'
			}
			if e[0] != 'u' {
				c.HeadMode, c.WorktreeMode, c.HeadOID = f[3], f[5], f[6]
			}
			c.Staged = c.Unmerged || f[1][0] != '.'
			c.Unstaged = c.Unmerged || f[1][1] != '.'
			s.Changes = append(s.Changes, c)
			if e[0] == '2' {
				// The rename's source follows as a record of its own.
				if i+1 >= len(recs) || recs[i+1] == "" {
					return nil, fmt.Errorf("git status: rename of %q without its source", c.Path)
				}
				i++
				if !TreePath(recs[i]) {
					return nil, outsideTree(recs[i])
				}
				s.Changes = append(s.Changes, Change{Path: recs[i], Staged: true})
			}
		default:
			return nil, fmt.Errorf("git status: unexpected record %q", e)
		}
	}
	return s, nil
}

// TreePath reports whether p names a file inside the working tree as git
// checks files out: relative, no empty, "." or ".." part, nothing in a
// .git directory. git refuses to put any other name in an index, but the
// index is a file anyone in the repository can write: an entry named
// sub/../../.bashrc or .git/hooks/pre-commit, made by hand, is read back
// by git status as it is - and a checkpoint would read, and a rollback
// write or remove, the file it names.
func TreePath(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) {
		return false
	}
	for part := range strings.SplitSeq(p, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// outsideTree is ParseStatus's error for a path TreePath refuses.
func outsideTree(p string) error {
	return fmt.Errorf("git status names %q, which is not a path in the working tree: git never writes such a name, so a commit or the index was written by hand (by an agent's program?); nothing is read or written there. Find it with 'git log -1 --stat' and 'git ls-files --stage': a commit holding it is undone with 'git reset --soft HEAD~1', an index holding it is rebuilt from HEAD with 'git read-tree HEAD' (what is staged is dropped; no file is touched)", p)
}
