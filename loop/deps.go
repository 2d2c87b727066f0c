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
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// An agent that sets a project up - npm install, python -m venv .venv,
// cargo build, a test run that leaves __pycache__ - in a tree whose
// .gitignore does not (yet) name what that makes had it all committed:
// the run's first story committed a virtual environment of 1,500 files,
// node_modules, Cargo's target/. Every clone then carries them, the
// history keeps them for good, and a host refuses the push once one file
// is over its limit. Such a directory, new, is left out of the commit and
// out of every later one (.git/info/exclude, the repository's own ignore
// file, which no commit carries), and the run says so. One that HEAD
// already tracks files in is the project's choice, and committed.

// depDir is a directory of installed packages or of a tool's cache that a
// commit left out - or a file of secrets (File): an environment file, a
// private key.
type depDir struct {
	Path string // from the root, without a trailing slash
	What string // what it is, for a person
	// Rule is the line .git/info/exclude gets: this one path
	// (/node_modules/, /.env), or a name in any directory (__pycache__/).
	Rule string
	// Committed: the agent's own commit took it in; the story's commit
	// takes it out of the tree, and the history keeps it.
	Committed bool
	File      bool
}

// name is d's path as the run says it: a directory's with a slash.
func (d depDir) name() string {
	if d.File {
		return d.Path
	}
	return d.Path + "/"
}

// holds reports whether p, a file's path from the root, is d or in it.
func (d depDir) holds(p string) bool {
	if d.File {
		return p == d.Path
	}
	return strings.HasPrefix(p, d.Path+"/")
}

// cacheDirSignature opens every CACHEDIR.TAG (the Cache Directory Tagging
// Specification, which Cargo, pytest, ruff and mypy follow).
var cacheDirSignature = []byte("Signature: 8a477f597d28d172789f06886806bc55")

// depDirsOf finds, among the paths git add just staged (as it names them,
// from the root), the directories of installed packages and caches they
// are in: node_modules/ and __pycache__/ anywhere, a directory holding
// pyvenv.cfg (a Python virtual environment) or a CACHEDIR.TAG, and the
// directories only tools name so (builtBy: .next, .gradle, .tox...). Only
// the outermost of nested ones, in path order.
func depDirsOf(root string, paths []string) []depDir {
	return depDirsIn(treeHeads(root), paths)
}

// depDirsIn is depDirsOf with the files' content read by head: the
// tree's, or a commit's (unwanted).
func depDirsIn(head heads, paths []string) []depDir {
	found := map[string]depDir{}
	// Directories first, by their names and marker files; then the files
	// outside them, whose content a few checks read.
	var files []string
next:
	for _, p := range paths {
		if git.IsState(p) {
			continue // wiggum's own (its git shim is a program), never committed
		}
		parts := strings.Split(p, "/")
		for i, part := range parts[:len(parts)-1] {
			if what := builtBy(part); what != "" {
				dir := strings.Join(parts[:i+1], "/")
				found[dir] = depDir{Path: dir, What: what, Rule: "/" + dir + "/"}
				continue next
			}
			if part == "node_modules" || part == "__pycache__" {
				dir := strings.Join(parts[:i+1], "/")
				// Python's bytecode is nobody's to commit, anywhere;
				// a node_modules elsewhere may be vendored on purpose.
				d := depDir{Path: dir, What: "installed packages (npm, yarn, pnpm)", Rule: "/" + dir + "/"}
				if part == "__pycache__" {
					d.What, d.Rule = "Python's compiled bytecode", "__pycache__/"
				}
				found[dir] = d
				continue next
			}
		}
		dir, base := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case dir != "" && base == "pyvenv.cfg":
			found[dir] = depDir{Path: dir, What: "a Python virtual environment (pyvenv.cfg)", Rule: "/" + dir + "/"}
		case dir != "" && base == "CACHEDIR.TAG" && tagged(head, p):
			found[dir] = depDir{Path: dir, What: "a build or tool cache (CACHEDIR.TAG)", Rule: "/" + dir + "/"}
		case coverageReport(dir, base):
			found[dir] = depDir{Path: dir, What: "a test coverage report (" + base + ")", Rule: "/" + dir + "/"}
		case base == ".coverage" || strings.HasPrefix(base, ".coverage."):
			// coverage.py's data file (and a parallel run's parts).
			found[p] = depDir{Path: p, What: "coverage.py's data file", Rule: "/" + p, File: true}
		default:
			files = append(files, p)
		}
	}
	for _, p := range files {
		inDir := false
		for d := range found {
			if strings.HasPrefix(p, d+"/") {
				inDir = true
				break
			}
		}
		if inDir {
			continue
		}
		if what := secretFile(head, p, path.Base(p)); what != "" {
			found[p] = depDir{Path: p, What: what, Rule: "/" + p, File: true}
		} else if what := editorFile(path.Base(p)); what != "" {
			found[p] = depDir{Path: p, What: what, Rule: "/" + p, File: true}
		} else if what := builtProgram(head, p); what != "" {
			found[p] = depDir{Path: p, What: what, Rule: "/" + p, File: true}
		}
	}
	dirs := make([]string, 0, len(found))
	for d := range found {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	var out []depDir
	for _, d := range dirs {
		if slices.ContainsFunc(out, func(o depDir) bool { return strings.HasPrefix(d, o.Path+"/") }) {
			continue
		}
		out = append(out, found[d])
	}
	return out
}

// builtProgram says what the file at p is when it is a program or an
// object a compiler made - go build's binary, a.out, a .o or .so, a
// Windows .exe, a Java .class - which a project commits no more than its
// packages: rebuilt at every story, each version of it stays in the
// history (a 10 MB binary committed by each of 100 stories is a gigabyte
// every clone downloads). It reads the file's first bytes; "" for
// anything else, and for what is not a regular file (a symlink to a
// system program is no build).
func builtProgram(head heads, p string) string {
	var what string
	head.opens(p, 512, func(h []byte) bool {
		switch {
		case bytes.HasPrefix(h, []byte("\x7fELF")):
			what = "a compiled program or library (ELF), a build's output"
		case len(h) >= 4 && (bytes.Equal(h[:4], []byte{0xfe, 0xed, 0xfa, 0xce}) || bytes.Equal(h[:4], []byte{0xfe, 0xed, 0xfa, 0xcf}) ||
			bytes.Equal(h[:4], []byte{0xce, 0xfa, 0xed, 0xfe}) || bytes.Equal(h[:4], []byte{0xcf, 0xfa, 0xed, 0xfe})):
			what = "a compiled program or library (Mach-O), a build's output"
		case bytes.HasPrefix(h, []byte{0xca, 0xfe, 0xba, 0xbe}):
			what = "a compiled Java class or a Mach-O universal binary, a build's output"
		case len(h) >= 0x40 && h[0] == 'M' && h[1] == 'Z':
			// A PE file: its header's offset, at 0x3C, points at "PE\0\0".
			off := int(h[0x3c]) | int(h[0x3d])<<8
			if off+4 <= len(h) && bytes.Equal(h[off:off+4], []byte("PE\x00\x00")) {
				what = "a compiled Windows program or library (PE), a build's output"
			}
		}
		return what != ""
	})
	return what
}

// builtBy says what a directory named name is when only a tool makes
// directories of that name - its build output or cache, never a
// project's source - or "".
func builtBy(name string) string {
	switch name {
	case ".next", ".nuxt", ".svelte-kit":
		return "a web framework's build output (" + name + ")"
	case ".turbo", ".parcel-cache", ".gradle":
		return "a build tool's cache (" + name + ")"
	case ".tox", ".nox":
		return "a Python test runner's environments (" + name + ")"
	case ".nyc_output", "htmlcov":
		return "a test coverage report (" + name + ")"
	}
	if strings.HasSuffix(name, ".egg-info") && len(name) > len(".egg-info") {
		return "Python packaging metadata (pip install -e, setup.py: " + name + ")"
	}
	return ""
}

// coverageReport reports whether base, a file's name, marks the directory
// it is in as a test coverage report when that directory is named
// coverage (Jest's, Vitest's, nyc's; istanbul writes these files): made
// anew at every test run, each version committed would stay in the
// history. A coverage directory without them may be source.
func coverageReport(dir, base string) bool {
	if path.Base(dir) != "coverage" {
		return false
	}
	switch base {
	case "lcov.info", "coverage-final.json", "clover.xml", "coverage-summary.json":
		return true
	}
	return false
}

// secretFile says what the file p (from the root; base is its name) is
// when it holds secrets nobody commits - an agent that sets a project up
// writes its .env with the keys it found, and git add -A takes it, to be
// pushed - or "": an environment file (.env, .env.local, .env.production;
// not .env.example, .env.sample, .env.template, .env.dist, .env.defaults
// and the like, made to be committed), direnv's .envrc, an SSH private
// key (id_rsa, id_ed25519 ...), and a .pem or .key file that holds a
// private key (its first bytes are read, only for those names).
func secretFile(head heads, p, base string) string {
	switch {
	case base == ".env" || base == ".envrc":
		return "an environment file, where secrets live (" + base + ")"
	case strings.HasPrefix(base, ".env."):
		for _, w := range []string{"example", "sample", "template", "dist", "default", "schema", "tpl", "tmpl"} {
			if strings.Contains(strings.ToLower(base), w) {
				return ""
			}
		}
		return "an environment file, where secrets live (" + base + ")"
	case base == "id_rsa" || base == "id_dsa" || base == "id_ecdsa" || base == "id_ed25519" || base == "id_ecdsa_sk" || base == "id_ed25519_sk":
		return "an SSH private key (" + base + ")"
	case strings.HasSuffix(base, ".pem") || strings.HasSuffix(base, ".key"):
		if head.opens(p, 8192, func(h []byte) bool { return bytes.Contains(h, []byte("PRIVATE KEY-----")) }) {
			return "a private key (" + base + ")"
		}
	}
	return ""
}

// editorFile says what a file named base is when an editor keeps it
// beside a file open in it - vim's swap file (.plan.md.swp, .swo ...),
// a backup (plan.md~), emacs's lock (.#plan.md) and auto-save (#plan.md#),
// kate's swap - or "". A person who opens the plan to queue a story while
// the run goes has one in the tree: the story's git add -A committed it
// (a binary file, deleted by the next story's commit), and a failed
// attempt's rollback removed it under the open editor.
func editorFile(base string) string {
	vimSwap := len(base) > 4 && base[0] == '.' && base[len(base)-4:len(base)-1] == ".sw" && base[len(base)-1] >= 'a' && base[len(base)-1] <= 'p'
	switch {
	case vimSwap, strings.HasSuffix(base, ".kate-swp"):
		return "an editor's swap file (" + base + ")"
	case strings.HasPrefix(base, ".#"):
		return "an editor's lock file (" + base + ")"
	case len(base) > 1 && strings.HasSuffix(base, "~"), len(base) > 2 && base[0] == '#' && base[len(base)-1] == '#':
		return "an editor's backup or auto-save file (" + base + ")"
	}
	return ""
}

// heads reads the first n bytes (at most) of the file at p, from the
// root: false when there is no regular file there.
type heads func(p string, n int) ([]byte, bool)

// treeHeads reads the working tree's files, under root.
func treeHeads(root string) heads {
	return func(p string, n int) ([]byte, bool) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if fi, err := os.Lstat(full); err != nil || !fi.Mode().IsRegular() {
			return nil, false
		}
		f, err := os.Open(full)
		if err != nil {
			return nil, false
		}
		defer f.Close()
		h := make([]byte, n)
		k, _ := io.ReadFull(f, h)
		return h[:k], true
	}
}

// opens reports whether the first n bytes of the file at p, a regular
// file, satisfy ok.
func (head heads) opens(p string, n int, ok func(h []byte) bool) bool {
	h, found := head(p, n)
	return found && ok(h)
}

// tagged reports whether the file at p opens with the CACHEDIR.TAG
// signature.
func tagged(head heads, p string) bool {
	return head.opens(p, len(cacheDirSignature), func(h []byte) bool { return bytes.Equal(h, cacheDirSignature) })
}

// under returns the dir of dirs that p is in (or the file of dirs that p
// is), or nil.
func under(dirs []depDir, p string) *depDir {
	for i := range dirs {
		if dirs[i].holds(p) {
			return &dirs[i]
		}
	}
	return nil
}

// leftOut reports whether p, just staged, is in one of dirs that the
// commit leaves out and HEAD does not have: reset out of the index. (One
// the agent's commit put in HEAD is out of the index already, and a
// reset would put HEAD's files back.)
func leftOut(dirs []depDir, p string) bool {
	d := under(dirs, p)
	return d != nil && !d.Committed
}

// newDepDirs keeps, of dirs, the ones base (a commit, or HEAD) tracks
// nothing in.
func newDepDirs(ctx context.Context, repo *git.Repo, base string, dirs []depDir) []depDir {
	return slices.DeleteFunc(dirs, func(d depDir) bool {
		ok, _ := repo.OK(ctx, "cat-file", "-e", base+":"+d.Path)
		return ok
	})
}

// keepDeps excludes, before a failed attempt's rollback, the directories
// of installed packages and caches among the tree's untracked files, so
// that the rollback leaves them: before, it saved a node_modules or a
// virtual environment the attempt installed - tens of thousands of files
// - in its backup, growing the repository by their size at every failed
// attempt, and removed it, for the retry to install again. One git
// process, on a failure only.
func (e *executor) keepDeps(ctx context.Context) []depDir {
	repo := e.st.Repo
	out, err := repo.Run(ctx, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil || out == "" {
		return nil
	}
	deps := newDepDirs(ctx, repo, "HEAD", depDirsOf(repo.Root, git.SplitZ(out)))
	if len(deps) == 0 || excludeDeps(repo.CommonDir, deps) != nil {
		return nil
	}
	return deps
}

// excludeDeps adds the rules of dirs to the repository's
// .git/info/exclude (shared by its worktrees), unless there already:
// under its lock, as workers commit at once (layout.Exclude).
func excludeDeps(commonDir string, dirs []depDir) error {
	rules := make([]string, len(dirs))
	for i, d := range dirs {
		rules[i] = d.Rule
	}
	return layout.Exclude(filepath.Join(commonDir, "info"), leftOutHeader, rules)
}

// leftOutHeader heads the rules excludeDeps writes; leftOutMark, its
// first words, are those of every version's (LeftOutRules reads them).
const (
	leftOutMark   = "wiggum: packages"
	leftOutHeader = leftOutMark + ", caches and secrets an agent made, never committed"
)

// LeftOutRules lists the rules runs wrote to the repository's
// .git/info/exclude for what agents made and no commit takes - packages,
// caches, secrets, builds - for wiggum status to show why git does not
// see them.
func LeftOutRules(commonDir string) []string {
	data, err := statefile.ReadFile(filepath.Join(commonDir, "info", "exclude"))
	if err != nil {
		return nil
	}
	var rules []string
	ours := false
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "#"):
			ours = strings.HasPrefix(l, "# "+leftOutMark)
		case ours && l != "":
			rules = append(rules, l)
		}
	}
	return rules
}

// say is what the run prints of d.
func (d depDir) say() string {
	if d.Committed {
		return fmt.Sprintf("%s is %s: the agent committed it, and the story's commit takes it out of the tree again - out of every later commit too (%s is in .git/info/exclude); the agent's commit keeps its files in the history (git log --stat -- %s)", d.name(), d.What, d.Rule, d.Path)
	}
	if d.File {
		return fmt.Sprintf("%s is %s: not committed, now or later (%s is in .git/info/exclude; if it belongs in the repository after all, commit it yourself: git add -f %s)", d.name(), d.What, d.Rule, d.Path)
	}
	return fmt.Sprintf("%s is %s: not committed, now or later (%s is in .git/info/exclude; put it in .gitignore to share the rule, or take it out of the exclude file to commit it)", d.name(), d.What, d.Rule)
}

// sayLeftOut says line of d, a directory of packages or a cache story's
// attempt leaves out of every commit, and records it (dir_left_out).
func (e *executor) sayLeftOut(story *plan.Story, d depDir, line string) {
	e.disp.printf("  %s", line)
	fields := map[string]any{"story": story.ID, "paths": []string{d.Path}, "what": d.What, "rule": d.Rule, "worker": e.worker}
	if d.File {
		fields["file"] = true
	}
	e.run.event("dir_left_out", fields)
}
