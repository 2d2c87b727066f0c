package loop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// lfsPointer is how every git LFS pointer file begins.
const lfsPointer = "version https://git-lfs.github.com/spec/v1"

// unfilteredLFS lists, of paths (what the last commit staged, added or
// modified), the ones git LFS would store (filter=lfs) that the commit
// took in as they are, not as pointers: git-lfs is not set up here (no
// filter.lfs.clean or .process in git's configuration - a clone made on a
// machine without it), so git add had no filter to run. Committed they
// are the story's work, and left out the story would lack them; but the
// repository's own rules say they belong in LFS, and a clone with LFS
// reports them as files that should have been pointers, so the run says
// so. Only the .gitattributes files on the paths' way (and info/
// attributes) are read for a filter=lfs; git is asked only when one
// names it.
func (c *committer) unfilteredLFS(ctx context.Context, paths []string) []string {
	if len(paths) == 0 || !mentionsLFS(c.repo, paths) {
		return nil
	}
	if set, _ := c.repo.Run(ctx, "config", "--get-regexp", `^filter\.lfs\.(clean|process)$`); strings.TrimSpace(set) != "" {
		return nil
	}
	out, err := c.repo.RunEnv(ctx, nil, []byte(strings.Join(paths, "\x00")+"\x00"), "check-attr", "-z", "--stdin", "filter")
	if err != nil {
		return nil
	}
	var raw []string
	f := strings.Split(out, "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if f[i+2] == "lfs" && !isLFSPointer(filepath.Join(c.repo.Root, filepath.FromSlash(f[i]))) && !slices.Contains(raw, f[i]) {
			raw = append(raw, f[i])
		}
	}
	slices.Sort(raw)
	return raw
}

// mentionsLFS reports whether a .gitattributes that may apply to one of
// paths - the root's, one in a directory on a path's way - or the
// repository's info/attributes names filter=lfs. Files read, no process.
func mentionsLFS(repo *git.Repo, paths []string) bool {
	names := func(file string) bool {
		data, err := os.ReadFile(file)
		return err == nil && bytes.Contains(data, []byte("filter=lfs"))
	}
	if names(filepath.Join(repo.InfoDir, "attributes")) {
		return true
	}
	read := map[string]bool{}
	for _, p := range paths {
		for dir := path.Dir(p); !read[dir]; dir = path.Dir(dir) {
			read[dir] = true
			if names(filepath.Join(repo.Root, filepath.FromSlash(dir), ".gitattributes")) {
				return true
			}
			if dir == "." {
				break
			}
		}
	}
	return false
}

// isLFSPointer reports whether the file at p is a git LFS pointer (the
// agent wrote one, or left one as it was).
func isLFSPointer(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(lfsPointer))
	n, _ := io.ReadFull(f, head)
	return string(head[:n]) == lfsPointer
}

// rawLFSNote is what the run says of the paths unfilteredLFS found.
func rawLFSNote(paths []string) string {
	if len(paths) == 1 {
		return fmt.Sprintf("%s is an LFS path but git-lfs is not set up here: committed as raw content; to store it in LFS: git lfs install, then git add --renormalize . and commit", paths[0])
	}
	return fmt.Sprintf("%s are LFS paths but git-lfs is not set up here: committed as raw content; to store them in LFS: git lfs install, then git add --renormalize . and commit", summarize(paths, 5))
}
