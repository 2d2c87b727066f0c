package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/lazyre"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Issues is a little-loops issues directory: DIR/<type>/P<n>-<ID>-<slug>.md.
// An issue is done when its file is in DIR/completed/.
type Issues struct{ Dir string }

// CompletedDir is where finished issues move.
const CompletedDir = "completed"

var issueName = lazyre.New(`^P([0-9]+)-([A-Za-z][A-Za-z0-9]*-[0-9]+)-(.*)\.md$`)

// Kind implements Plan.
func (p *Issues) Kind() string { return "issues" }

// Path implements Plan.
func (p *Issues) Path() string { return p.Dir }

type issueFile struct {
	Story
	path string
}

func (p *Issues) scan() ([]issueFile, error) {
	types, err := os.ReadDir(p.Dir)
	if err != nil {
		return nil, fmt.Errorf("plan: read issues directory %s: %w", p.Dir, err)
	}
	var out []issueFile
	byID := map[string]int{}
	for _, t := range types {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		done := t.Name() == CompletedDir
		dir := filepath.Join(p.Dir, t.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			// A type directory removed while we list is an empty one.
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("plan: read %s: %w", dir, err)
		}
		for _, f := range files {
			m := issueName().FindStringSubmatch(f.Name())
			if m == nil || f.IsDir() {
				continue
			}
			path := filepath.Join(dir, f.Name())
			is := issueFile{path: path, Story: Story{
				ID: m[2], Priority: atoiOr(m[1], 1<<30), Done: done,
				Title: strings.ReplaceAll(m[3], "-", " "),
			}}
			if i, ok := byID[is.ID]; ok {
				// The same issue open and completed (a move seen half way, or
				// two copies): completed wins.
				if done {
					out[i].Done = true
				}
				// Two open issues with one id (a copied file renamed, its
				// id left as it was): the second would be moved to
				// completed with the first and never run, as a markdown
				// plan's (sameIDTwice).
				if !done && !out[i].Done {
					return nil, badInput("plan: %s has two open issues as %s (%s and %s): the second would be completed with the first and never run; give each issue its own id",
						p.Dir, is.ID, relTo(p.Dir, out[i].path), relTo(p.Dir, path))
				}
				continue
			}
			byID[is.ID] = len(out)
			out = append(out, is)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

var firstHeading = lazyre.New(`(?m)^#\s+(.+?)\s*$`)

// Stories implements Plan.
func (p *Issues) Stories() ([]Story, error) {
	files, err := p.scan()
	if err != nil {
		return nil, err
	}
	out := make([]Story, len(files))
	for i, f := range files {
		s := f.Story
		data, err := statefile.ReadFile(f.path)
		switch {
		case err == nil:
			s.Details = strings.TrimSpace(string(data))
			if h := firstHeading().FindStringSubmatch(s.Details); h != nil {
				s.Title = h[1]
			}
		case errors.Is(err, fs.ErrNotExist):
			// Moved to completed by someone else since the listing.
			s.Done = true
		default:
			return nil, fmt.Errorf("plan: read %s: %w", f.path, err)
		}
		out[i] = s
	}
	return out, nil
}

// MarkDone moves the issue's file into DIR/completed/. The move is one
// rename: a source already gone (another worker completed it) or a
// destination already there is not an error.
func (p *Issues) MarkDone(id string) error {
	files, err := p.scan()
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.ID != id {
			continue
		}
		if f.Done && filepath.Base(filepath.Dir(f.path)) == CompletedDir {
			return nil
		}
		dst := filepath.Join(p.Dir, CompletedDir, filepath.Base(f.path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("plan: create %s: %w", filepath.Dir(dst), err)
		}
		if err := os.Rename(f.path, dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("plan: complete %s: %w", id, err)
		}
		return nil
	}
	return &NotFoundError{ID: id, Path: p.Dir}
}

// relTo is path relative to dir when it is inside it, else path.
func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return path
}
