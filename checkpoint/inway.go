package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// InTheWayAside is the directory, in the common git directory, where a
// rollback moves a directory that stands where the checkpoint has a file
// and holds what no backup of this tree can: a git repository of its own
// (its history) or ignored files. One directory per path, never removed by
// wiggum.
const InTheWayAside = "wiggum-aside"

// DirAside is a directory a rollback moved whole out of the way of a
// checkpoint's file (see inTheWay).
type DirAside struct {
	Path  string `json:"path"`
	Holds string `json:"holds"` // what a backup could not hold
	Aside string `json:"aside,omitempty"`
}

func (d DirAside) String() string {
	if d.Aside == "" {
		return fmt.Sprintf("%s/ is where the checkpoint has a file and holds %s: it would be moved whole under %s", d.Path, d.Holds, InTheWayAside)
	}
	return fmt.Sprintf("%s/ was where the checkpoint has a file and held %s, which no backup holds: moved whole to %s, nothing in it deleted", d.Path, d.Holds, d.Aside)
}

// inTheWay finds the directories the rollback must replace by a file of
// the checkpoint (a file or symbolic link the attempt turned into a
// directory) that hold something the backup does not: a .git anywhere in
// them (a git init, a clone: the snapshot leaves a repository of its own
// out) or ignored files. Writing the file would delete them recursively
// (writeFile, checkout-index -f), so they are moved whole out of the tree
// instead (setAside). A directory whose files are all in the backup
// (tracked or untracked, not ignored) is left to be replaced, as git does.
// Only the written paths are stat'ed; the rest runs only for a directory.
func (s *State) inTheWay(ctx context.Context, changes []treeChange) ([]DirAside, error) {
	var out []DirAside
	for _, c := range changes {
		if c.mode == "" || c.mode == "160000" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(c.path)))
		if err != nil || !fi.IsDir() {
			continue
		}
		var holds []string
		if hasGit(filepath.Join(s.Repo.Root, filepath.FromSlash(c.path))) {
			holds = append(holds, "a git repository of its own")
		}
		ignored, err := s.Repo.Run(ctx, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--", ":(literal)"+c.path+"/")
		if err != nil {
			return nil, fmt.Errorf("list the ignored files in %s/: %w", c.path, err)
		}
		if n := strings.Count(ignored, "\x00"); n > 0 {
			holds = append(holds, fmt.Sprintf("%d ignored file(s) or director(ies)", n))
		}
		if len(holds) > 0 {
			out = append(out, DirAside{Path: c.path, Holds: strings.Join(holds, " and ")})
		}
	}
	return out, nil
}

// hasGit reports whether a .git (a directory or a file) is anywhere in dir.
func hasGit(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			found = true // unreadable: it may hold one
			return filepath.SkipAll
		}
		if d.Name() == ".git" {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// setAside moves each of dirs whole under InTheWayAside, where everything
// in it stays as it was (a repository's history and working files, ignored
// files), and says where in dirs.
func (s *State) setAside(dirs []DirAside) error {
	for i := range dirs {
		d := &dirs[i]
		aside := filepath.Join(s.Repo.CommonDir, InTheWayAside, time.Now().UTC().Format("20060102T150405.000000000Z")+"-"+strings.ReplaceAll(d.Path, "/", "%"))
		if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(s.Repo.Root, filepath.FromSlash(d.Path)), aside); err != nil {
			if i > 0 {
				return fmt.Errorf("move %s/ out of the way of the checkpoint's file (%s/ is moved to %s already): %w", d.Path, dirs[0].Path, dirs[0].Aside, err)
			}
			return fmt.Errorf("move %s/ out of the way of the checkpoint's file: %w", d.Path, err)
		}
		d.Aside = aside
	}
	return nil
}

// underAny reports whether dir (from the root, maybe ending in "/") is one
// of dirs or inside one.
func underAny(dir string, dirs []DirAside) bool {
	dir = strings.TrimSuffix(dir, "/")
	for _, d := range dirs {
		if dir == d.Path || strings.HasPrefix(dir, d.Path+"/") {
			return true
		}
	}
	return false
}

// SetAside lists what rollbacks moved out of the tree and no backup holds:
// the git directories of repositories an agent made (NestedAside) and the
// directories moved whole out of a checkpoint's file's way
// (InTheWayAside), each as a path to look in.
func (s *State) SetAside() (nested, inTheWay []string) {
	list := func(dir string) []string {
		entries, err := os.ReadDir(filepath.Join(s.Repo.CommonDir, dir))
		if err != nil {
			return nil
		}
		paths := make([]string, len(entries))
		for i, e := range entries {
			paths[i] = filepath.Join(s.Repo.CommonDir, dir, e.Name())
		}
		return paths
	}
	return list(NestedAside), list(InTheWayAside)
}
