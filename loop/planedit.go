package loop

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/internal/plan"
)

// planAtStart is the plan file as an attempt in the main tree found it,
// for planKept. A person queues work by adding stories to the plan while
// the loop runs; the rollback of a failed attempt returns the whole tree
// to the checkpoint, the plan with it, and those stories went with it -
// saved in the backup, but gone from the plan without a word.
type planAtStart struct {
	path    string
	data    []byte
	stories map[string]plan.Story
}

// readPlanAtStart reads the plan file and its stories; nil for a plan that
// is not one file (an issues directory) or cannot be read.
func readPlanAtStart(p plan.Plan) *planAtStart {
	if p == nil || p.Kind() == "issues" {
		return nil
	}
	data, err := os.ReadFile(p.Path())
	if err != nil {
		return nil
	}
	stories, err := p.Stories()
	if err != nil {
		return nil
	}
	s := &planAtStart{path: p.Path(), data: data, stories: make(map[string]plan.Story, len(stories))}
	for _, st := range stories {
		s.stories[st.ID] = st
	}
	return s
}

// planEdit is what changed in the plan file during the attempt.
type planEdit struct {
	now     []byte
	added   []string // stories that were not in the plan at the start
	changed []string // stories there at the start whose text or state changed
	// ownTick: the one change is the attempt's own story ticked (the
	// agent marking its story done, as snarktank's prompt asks): the
	// loop's to make, and nothing to keep or to tell.
	ownTick bool
}

// editSince reads the plan now and says what changed since start; nil when
// nothing did.
func (s *planAtStart) editSince(p plan.Plan, story string) *planEdit {
	if s == nil {
		return nil
	}
	now, err := os.ReadFile(s.path)
	if err != nil || bytes.Equal(now, s.data) {
		return nil
	}
	e := &planEdit{now: now}
	stories, err := p.Stories()
	if err != nil {
		e.changed = append(e.changed, "the plan no longer reads as one")
		return e
	}
	seen := map[string]bool{}
	for _, st := range stories {
		seen[st.ID] = true
		was, ok := s.stories[st.ID]
		switch {
		case !ok:
			e.added = append(e.added, st.ID)
		case was != st:
			e.changed = append(e.changed, st.ID)
		}
	}
	for id := range s.stories {
		if !seen[id] {
			e.changed = append(e.changed, id+" (removed)")
		}
	}
	if len(e.added) == 0 && len(e.changed) == 1 && e.changed[0] == story {
		e.ownTick = s.tickedIs(story, now)
	}
	return e
}

// tickedIs reports whether now is the plan at the start with story ticked
// by the plan's own MarkDone, byte for byte: the agent's edit was that
// tick and nothing else (a note it added besides is work to keep).
func (s *planAtStart) tickedIs(story string, now []byte) bool {
	dir, err := os.MkdirTemp("", "wiggum-plan-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, filepath.Base(s.path))
	if os.WriteFile(path, s.data, 0o600) != nil {
		return false
	}
	p, err := plan.OpenFile(path)
	if err != nil || p.MarkDone(story) != nil {
		return false
	}
	ticked, err := os.ReadFile(path)
	return err == nil && bytes.Equal(ticked, now)
}

// restoreOwnTick puts the plan file back as it was at the start when the
// only change is the attempt's own story ticked, and reports whether it
// did.
func (s *planAtStart) restoreOwnTick(p plan.Plan, story string) (bool, error) {
	e := s.editSince(p, story)
	if e == nil || !e.ownTick {
		return false, nil
	}
	return true, renameio.WriteFile(s.path, s.data, 0o644)
}

// keep writes the plan back as it was before the rollback when the change
// only added stories (or text outside the stories): the person's queued
// work. A change to a story that was there - a tick, a rewrite, a removal,
// by the agent or anyone - goes with the rollback; the note says where the
// changed plan is saved.
func (e *planEdit) keep(path, rel, backup string) (string, error) {
	if e == nil || e.ownTick {
		return "", nil // the rollback takes the agent's own tick away
	}
	if len(e.changed) == 0 {
		if err := renameio.WriteFile(path, e.now, 0o644); err != nil {
			return "", fmt.Errorf("keep the plan's new stories: %w", err)
		}
		if len(e.added) == 0 {
			return rel + " changed during the attempt outside its stories: kept as it is", nil
		}
		return fmt.Sprintf("%s gained %s during the attempt: kept (the rollback leaves the plan's new stories)", rel, strings.Join(e.added, ", ")), nil
	}
	where := ""
	if backup != "" {
		where = fmt.Sprintf("; the changed plan is saved: git show %s:%s", backup, rel)
	}
	return fmt.Sprintf("%s changed during the attempt (%s): rolled back with it%s", rel, strings.Join(e.changed, ", "), where), nil
}

// plan is the plan the executor's tree holds: the run's in the main tree,
// the worktree's own copy for a worker; nil for an issues directory.
func (e *executor) plan() plan.Plan {
	if e.worktree == "" {
		return e.run.opts.Plan
	}
	if e.wplan == nil && e.run.opts.Plan.Kind() != "issues" {
		e.wplan, _ = plan.OpenFile(filepath.Join(e.st.Repo.Root, filepath.FromSlash(e.run.planRel)))
	}
	return e.wplan
}

// readPlan reads the executor's plan at an attempt's start.
func (e *executor) readPlan() *planAtStart {
	return readPlanAtStart(e.plan())
}
