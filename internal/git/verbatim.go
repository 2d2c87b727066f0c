package git

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Verbatim reports whether git stores each of paths (relative to the
// root, slash-separated) byte for byte, and checks it out the same way:
// no attributes file can apply to them (.gitattributes in their
// directories up to the root, info/attributes, the user's and the system's
// attributes files) and no configuration converts content (core.autocrlf,
// core.eol, filters, core.attributesFile, an include that could hold any
// of them, core.bigFileThreshold). It only looks for those files, so false
// means "ask git", not "git converts". wiggum then hashes or writes such
// files itself instead of starting git for a handful of them.
func (r *Repo) Verbatim(paths []string) bool {
	if os.Getenv("GIT_ATTR_SOURCE") != "" {
		return false
	}
	files, ok := systemLevel("GIT_ATTR_NOSYSTEM", "", "gitattributes")
	if !ok {
		return false
	}
	xdg, _ := xdgConfig()
	if xdg == "" {
		return false
	}
	files = append(files, filepath.Join(xdg, "git", "attributes"), filepath.Join(r.CommonDir, "info", "attributes"))
	if !configLacks(r.CommonDir, r.GitDir, nil, "autocrlf", "eol", "filter", "attributesfile", "include", "bigfilethreshold") {
		return false
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if path.Base(p) == ".gitattributes" || strings.ContainsAny(p, "\x00") {
			return false
		}
		for d := path.Dir(p); !seen[d]; d = path.Dir(d) {
			seen[d] = true
			files = append(files, filepath.Join(r.Root, filepath.FromSlash(d), ".gitattributes"))
			if d == "." || d == "/" {
				break
			}
		}
	}
	for _, f := range files {
		// Not there, or a file where a directory on the way would be.
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return false // there, or cannot tell
		}
	}
	return true
}
