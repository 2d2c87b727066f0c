// Package plan reads the stories a loop works through - a markdown checklist,
// a snarktank-style prd.json, or a little-loops issues directory - and marks
// one story done by changing exactly that story and nothing else, atomically.
package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/lazyre"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Story is one unit of work.
type Story struct {
	ID       string
	Title    string
	Details  string // the story's own text: its detail block, description, or issue file
	Priority int    // lower runs first; markdown plans use file order
	Done     bool
}

// Plan is a source of stories. Stories rereads the source every call, so an
// agent that edits the plan (adds a story, ticks one) is seen next iteration.
type Plan interface {
	Kind() string // "markdown", "prd.json" or "issues"
	Path() string // absolute path of the plan file or directory
	Stories() ([]Story, error)
	MarkDone(id string) error
}

// Next returns the first open story not in skip, or nil when none is left.
func Next(stories []Story, skip map[string]bool) *Story {
	for i := range stories {
		if !stories[i].Done && !skip[stories[i].ID] {
			return &stories[i]
		}
	}
	return nil
}

// NextOpen returns what Next and Open would say of p's stories - the
// first story not done and not in skip (nil when none), and how many are
// not done - without listing them all where p can (a markdown plan keeps
// both up to date with its ticks), so a loop's iteration costs the same in
// a plan of 10 stories and of 10,000.
func NextOpen(p Plan, skip map[string]bool) (*Story, int, error) {
	if n, ok := p.(interface {
		next(map[string]bool) (*Story, int, error)
	}); ok {
		return n.next(skip)
	}
	stories, err := p.Stories()
	if err != nil {
		return nil, 0, err
	}
	return Next(stories, skip), Open(stories), nil
}

// Unread refuses a markdown plan with open checkboxes that are neither a
// story wiggum can read nor a story's criterion (Markdown.Unread); other
// plans have none.
func Unread(p Plan) error {
	if m, ok := p.(*Markdown); ok {
		return m.Unread()
	}
	return nil
}

// Open counts the stories not done.
func Open(stories []Story) int {
	n := 0
	for _, s := range stories {
		if !s.Done {
			n++
		}
	}
	return n
}

// Source says where the plan is; at most one field may be set. With none
// set, Resolve looks for prd.json, .ralph/prd.json, then a single
// .ralph/PRD-N/plan.md.
type Source struct {
	PRD    string // N of .ralph/PRD-N/plan.md, a positive integer
	File   string // any markdown plan, or a prd.json
	Issues string // an issues directory
}

// BadInputError is a plan location the user got wrong; nothing was read.
type BadInputError struct{ Msg string }

func (e *BadInputError) Error() string { return e.Msg }

func badInput(format string, args ...any) error {
	return &BadInputError{Msg: fmt.Sprintf(format, args...)}
}

var prdNumber = lazyre.New(`^[1-9][0-9]{0,8}$`)

// Resolve finds the plan. root is the working-tree root; relative paths are
// taken from cwd. Every path must stay inside root, symlinks included.
func Resolve(root, cwd string, src Source) (Plan, error) {
	set := 0
	for _, v := range []string{src.PRD, src.File, src.Issues} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, badInput("plan: give only one of --prd, --plan and --issues")
	}
	switch {
	case src.PRD != "":
		if !prdNumber().MatchString(src.PRD) {
			return nil, badInput("plan: --prd takes a positive integer N (the plan is .ralph/PRD-N/plan.md), not %q", src.PRD)
		}
		path, err := inside(root, filepath.Join(root, ".ralph", "PRD-"+src.PRD, "plan.md"))
		if err != nil {
			return nil, err
		}
		return openFile(path)
	case src.File != "":
		path, err := inside(root, absFrom(cwd, src.File))
		if err != nil {
			return nil, err
		}
		return openFile(path)
	case src.Issues != "":
		path, err := inside(root, absFrom(cwd, src.Issues))
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, badInput("plan: issues directory %s: %v", src.Issues, unwrapPath(err))
		}
		if !fi.IsDir() {
			return nil, badInput("plan: --issues %s is not a directory", src.Issues)
		}
		return &Issues{Dir: path}, nil
	}
	// scripts/ralph/prd.json: where snarktank's ralph.sh, copied into a
	// project as its README says, keeps it (beside the script).
	for _, rel := range []string{"prd.json", ".ralph/prd.json", "scripts/ralph/prd.json"} {
		if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
			return openFile(filepath.Join(root, rel))
		}
	}
	found, _ := filepath.Glob(filepath.Join(root, ".ralph", "PRD-*", "plan.md"))
	switch len(found) {
	case 1:
		return openFile(found[0])
	case 0:
		return nil, badInput("plan: no plan found; pass --plan FILE, --prd N (.ralph/PRD-N/plan.md) or --issues DIR, or create prd.json")
	}
	sort.Strings(found)
	for i := range found {
		found[i], _ = filepath.Rel(root, found[i])
	}
	return nil, badInput("plan: several plans found (%s); choose one with --prd N", strings.Join(found, ", "))
}

func absFrom(cwd, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
}

// inside resolves symlinks in path's existing prefix and refuses anything
// that ends up outside root.
func inside(root, path string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("plan: resolve %s: %w", root, err)
	}
	resolved := resolveExisting(path)
	rel, err := filepath.Rel(realRoot, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", badInput("plan: %s is outside the repository %s; plans must live inside it", path, root)
	}
	return filepath.Join(realRoot, rel), nil
}

// resolveExisting evaluates symlinks in the longest existing prefix of path,
// so a plan that does not exist yet still gets a containment check.
func resolveExisting(path string) string {
	path = filepath.Clean(path)
	var tail []string
	for {
		if r, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Join(append([]string{r}, tail...)...)
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(append([]string{path}, tail...)...)
		}
		tail = append([]string{filepath.Base(path)}, tail...)
		path = parent
	}
}

// OpenFile opens the plan file at path (a prd.json by its extension, else
// markdown), as Resolve does for a file.
func OpenFile(path string) (Plan, error) { return openFile(path) }

func openFile(path string) (Plan, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, badInput("plan: %s: %v", path, unwrapPath(err))
	}
	if fi.IsDir() {
		return nil, badInput("plan: %s is a directory; use --issues for an issues directory", path)
	}
	if !fi.Mode().IsRegular() {
		return nil, badInput("plan: %v; put the plan there as a file, then run again", &statefile.NotRegularError{Path: path, Mode: fi.Mode()})
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return &PRDJSON{File: path}, nil
	}
	return &Markdown{File: path}, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeAtomic replaces path with data (temp file, rename), keeping the
// file's permission bits: a crash never leaves a torn plan. It does not
// fsync: the loop commits the tick right after, and git does not fsync
// that commit either (core.fsync off), so a sync here would buy no
// durability the commit lacks - and cost milliseconds that grow with the
// plan's size on every tick.
func writeAtomic(path string, data []byte) error {
	// A symlinked plan stays a link: its target is what gets replaced.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(f.Name(), mode)
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}
	if err != nil {
		return fmt.Errorf("plan: write %s: %w", path, err)
	}
	return nil
}

// NotFoundError is a story id the plan does not contain.
type NotFoundError struct{ ID, Path string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("plan: story %s not found in %s", e.ID, e.Path)
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
