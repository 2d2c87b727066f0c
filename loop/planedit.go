package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// planAtStart is the plan file as an attempt found it, for editSince. A
// person queues work by adding stories to the plan while the loop runs;
// the rollback of a failed attempt returns the whole tree to the
// checkpoint, the plan with it, and those stories went with it - saved in
// the backup, but gone from the plan without a word. Only the bytes are
// kept: the attempt's path reads the file and parses nothing; the start's
// stories are parsed only when the plan changed.
type planAtStart struct {
	path string
	data []byte
}

// readPlanAtStart reads the plan file; nil for a plan that is not one file
// (an issues directory) or cannot be read.
func readPlanAtStart(p plan.Plan) *planAtStart {
	if p == nil || p.Kind() == "issues" {
		return nil
	}
	data, err := statefile.ReadFile(p.Path())
	if err != nil {
		return nil
	}
	return &planAtStart{path: p.Path(), data: data}
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
	// tickedAndAdded: the lines of a markdown plan's new stories, when
	// the agent's other change is its own story ticked - a ralph
	// prompt's "mark your story done, add what you found" - so that a
	// worker's landing carries them (addedLines).
	tickedAndAdded []string
	// addedObjects: a prd.json's new stories as its userStories hold
	// them, when its only other change is its own story's passes set
	// true (or none), for a worker's landing to carry.
	addedObjects []json.RawMessage
	// dropped: the stories a markdown plan's new lines list again - a
	// retry's agent adding the follow-up its last attempt added, which
	// the rollback kept - whose lines now leaves out (withoutCopies);
	// same: without them, the plan is as at the start.
	dropped []string
	same    bool
}

// editSince reads the plan now and says what changed since start; nil when
// nothing did, or when the plan at the start does not read as one.
func (s *planAtStart) editSince(p plan.Plan, story string) *planEdit {
	if s == nil {
		return nil
	}
	now, err := statefile.ReadFile(s.path)
	if err != nil || bytes.Equal(now, s.data) {
		return nil
	}
	// The start's plan, read by the plan's own code from a copy of it.
	dir, err := os.MkdirTemp("", "wiggum-plan-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	copyPath := filepath.Join(dir, filepath.Base(s.path))
	if os.WriteFile(copyPath, s.data, 0o600) != nil {
		return nil
	}
	start, err := plan.OpenFile(copyPath)
	if err != nil {
		return nil
	}
	before, err := start.Stories()
	if err != nil {
		return nil
	}
	was := make(map[string]plan.Story, len(before))
	for _, st := range before {
		was[st.ID] = st
	}
	e := &planEdit{now: now}
	stories, err := p.Stories()
	if err != nil {
		e.changed = append(e.changed, "the plan no longer reads as one")
		return e
	}
	if p.Kind() == "markdown" {
		e.now, e.dropped = withoutCopies(s.data, now, before, stories)
		e.same = bytes.Equal(e.now, s.data)
	}
	seen := map[string]bool{}
	onlyPasses := false // the one change to story is its passes set true
	for _, st := range stories {
		w, ok := was[st.ID]
		if !ok && seen[st.ID] {
			continue // a new story listed again: one story, its copy dropped
		}
		seen[st.ID] = true
		if ok && p.Kind() != "prd.json" {
			// A markdown plan's or an issues directory's priority is
			// the story's place in it: a story removed or added above
			// moves it, and changes nothing of it.
			w.Priority = st.Priority
		}
		switch {
		case !ok:
			e.added = append(e.added, st.ID)
		case w != st:
			e.changed = append(e.changed, st.ID)
			ticked := w
			ticked.Done = true
			onlyPasses = st.ID == story && ticked == st
		}
	}
	for _, st := range before {
		if !seen[st.ID] {
			e.changed = append(e.changed, st.ID+" (removed)")
		}
	}
	if len(e.changed) == 1 && e.changed[0] == story {
		// The agent's own tick only when the plan is, byte for byte,
		// the start's ticked by the plan's own MarkDone (a note it
		// added besides is work to keep).
		ticked, err := markedDone(start, copyPath, story)
		switch {
		case err != nil:
		case len(e.added) == 0:
			e.ownTick = bytes.Equal(ticked, now)
		case p.Kind() == "markdown":
			e.tickedAndAdded = storyLines(dir, newLines(ticked, e.now), e.added)
		}
	}
	if p.Kind() == "prd.json" && len(e.added) > 0 && (len(e.changed) == 0 || len(e.changed) == 1 && onlyPasses) {
		e.addedObjects, _ = plan.StoriesIn(now, e.added)
	}
	return e
}

// withoutCopies is now without the lines, new since base, that list a
// story the plan lists already - at the start (before), or on a line
// above - and the ids of those stories. A markdown plan reads a line
// listed twice as one story, so the copy was kept with the attempt's other
// additions, said as a change outside its stories, and counted as one
// more story left. Only as many lines go as the plan now lists each story
// more often than it did (stories: the plan now); the backup of the
// attempt has them. now as it is, and nil, when none goes.
func withoutCopies(base, now []byte, before, stories []plan.Story) ([]byte, []string) {
	had := map[string]int{}
	for _, st := range before {
		had[st.ID]++
	}
	count := map[string]int{}
	for _, st := range stories {
		count[st.ID]++
	}
	extra := map[string]int{}
	for id, n := range count {
		if k := n - max(had[id], 1); k > 0 {
			extra[id] = k
		}
	}
	if len(extra) == 0 {
		return now, nil
	}
	old := map[string]int{}
	for _, l := range strings.SplitAfter(string(base), "\n") {
		old[l]++
	}
	var kept bytes.Buffer
	var ids []string
	for _, l := range strings.SplitAfter(string(now), "\n") {
		if old[l] > 0 {
			old[l]--
			kept.WriteString(l)
			continue
		}
		id := plan.LineStoryID(l)
		if id != "" && extra[id] > 0 && had[id] > 0 {
			extra[id]--
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
			continue
		}
		if id != "" {
			had[id]++ // listed from here on: a later line of it is a copy
		}
		kept.WriteString(l)
	}
	if ids == nil {
		return now, nil
	}
	return kept.Bytes(), ids
}

// newLines are the lines of now that base does not have, in order.
func newLines(base, now []byte) []string {
	had := map[string]int{}
	for _, l := range strings.Split(string(base), "\n") {
		had[l]++
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(now), "\n"), "\n") {
		if had[l] > 0 {
			had[l]--
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// storyLines is lines when, read as a markdown plan (in a file in dir),
// they hold the stories ids and no other: nil when they hold another -
// the agent's tick of its own story written otherwise than the loop's
// MarkDone would, which appended to the run's plan would list the story
// twice.
func storyLines(dir string, lines, ids []string) []string {
	path := filepath.Join(dir, "added.md")
	if len(lines) == 0 || os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600) != nil {
		return nil
	}
	got, err := (&plan.Markdown{File: path}).Stories()
	if err != nil || len(got) != len(ids) {
		return nil
	}
	for _, st := range got {
		if !slices.Contains(ids, st.ID) {
			return nil
		}
	}
	return lines
}

// markedDone ticks story in the plan p (at path) and returns the file.
func markedDone(p plan.Plan, path, story string) ([]byte, error) {
	if err := p.MarkDone(story); err != nil {
		return nil, err
	}
	return statefile.ReadFile(path)
}

// settleWorkerPlan reads a worker's plan once at its attempt's end: when
// the only change is the attempt's own story ticked, it puts the file
// back as it was at the start (the tick is the loop's to make, in the main
// tree); otherwise it says what the agent added (addedLines).
func (s *planAtStart) settleWorkerPlan(p plan.Plan, story string) *addedStories {
	if s == nil || p == nil {
		return nil
	}
	e := s.editSince(p, story)
	if e != nil && e.ownTick {
		_ = renameio.WriteFile(s.path, s.data, 0o644)
		return nil
	}
	a := s.addedLines(e, p.Kind())
	if e != nil {
		// Stories there at the start that the agent ticked, took out
		// or rewrote: the run's plan is the main tree's, so they are
		// not taken, and the landing says so.
		other := slices.DeleteFunc(slices.Clone(e.changed), func(c string) bool { return c == story })
		if len(other) > 0 {
			if a == nil {
				a = &addedStories{}
			}
			a.Changed = other
		}
	}
	return a
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
		var notes []string
		switch {
		case len(e.added) > 0:
			notes = append(notes, fmt.Sprintf("%s gained %s during the attempt: kept (the rollback leaves the plan's new stories)", rel, strings.Join(e.added, ", ")))
		case !e.same || len(e.dropped) == 0:
			notes = append(notes, rel+" changed during the attempt outside its stories: kept as it is")
		}
		switch len(e.dropped) {
		case 0:
		case 1:
			notes = append(notes, e.dropped[0]+" is already in the plan: the attempt's copy dropped")
		default:
			notes = append(notes, strings.Join(e.dropped, ", ")+" are already in the plan: the attempt's copies dropped")
		}
		return strings.Join(notes, "; "), nil
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

// addedStories is what a worker's agent added to its worktree's copy of a
// markdown plan: the stories (IDs) and the lines that hold them.
type addedStories struct {
	IDs   []string
	Lines []string
	// Objects: a prd.json's new stories, as its userStories hold them.
	Objects []json.RawMessage
	// Changed: the stories there at the start that the agent changed
	// (ticked, took out, rewrote), which are not taken.
	Changed []string
}

// addedLines says what the agent added to a markdown plan during the
// attempt (e, since s), when that is all it did to it: the new stories
// and the plan's new lines, in order. Only the IDs when a story changed
// too, or for a prd.json (kind), whose additions its landing cannot carry
// line by line; nil when it added none.
func (s *planAtStart) addedLines(e *planEdit, kind string) *addedStories {
	if e == nil || len(e.added) == 0 {
		return nil
	}
	if e.tickedAndAdded != nil {
		return &addedStories{IDs: e.added, Lines: e.tickedAndAdded}
	}
	if len(e.addedObjects) == len(e.added) {
		return &addedStories{IDs: e.added, Objects: e.addedObjects}
	}
	if kind != "markdown" || len(e.changed) > 0 {
		return &addedStories{IDs: e.added} // said, not carried
	}
	lines := newLines(s.data, e.now)
	if len(lines) == 0 {
		return nil
	}
	return &addedStories{IDs: e.added, Lines: lines}
}

// addStoriesOf adds to the run's plan, as the story lands, the stories its
// worker's agent added to its worktree's plan (a follow-up it found): a
// worker's plan is never committed, and they went with its worktree,
// saved in a backup the run named as "uncommitted work". They go at the
// end of the plan, as a person queues work; a story the plan has by then
// is not added twice.
func (r *run) addStoriesOf(story string) {
	a := r.takeAdded(story)
	if a == nil {
		return
	}
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return
	}
	for _, st := range stories {
		if slices.Contains(a.IDs, st.ID) {
			r.disp.printf("  %s: its agent added %s to the plan in its worktree; the run's plan has it already", story, st.ID)
			return
		}
	}
	if a.Objects != nil {
		if pj, ok := r.opts.Plan.(*plan.PRDJSON); ok {
			r.appended(story, a.IDs, pj.Append(a.Objects))
		}
		return
	}
	path := r.opts.Plan.Path()
	data, err := statefile.ReadFile(path)
	if err != nil {
		return
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, []byte(strings.Join(a.Lines, "\n")+"\n")...)
	r.appended(story, a.IDs, renameio.WriteFile(path, data, 0o644))
}

// takeAdded takes what story's worker's agent added to its worktree's
// plan, saying what of it is not taken; nil when nothing is to be added.
func (r *run) takeAdded(story string) *addedStories {
	r.addedMu.Lock()
	a := r.added[story]
	delete(r.added, story)
	r.addedMu.Unlock()
	if a == nil {
		return nil
	}
	if len(a.Changed) > 0 {
		r.disp.printf("  %s: its agent also changed %s in its worktree's copy of the plan: not taken - the run's plan is the main tree's, where each story is done by an attempt of its own; the copy is saved with the worktree (below)", story, strings.Join(a.Changed, ", "))
	}
	if len(a.IDs) == 0 {
		return nil
	}
	if a.Lines == nil && a.Objects == nil {
		r.disp.printf("  %s: its agent added %s to the plan in its worktree, beside other changes to it: not added to the run's plan; its copy is saved with the worktree (below)", story, strings.Join(a.IDs, ", "))
		return nil
	}
	return a
}

// appended says that the stories ids story's worker's agent added were
// added to the run's plan (err nil, and the workers see them), or why not.
func (r *run) appended(story string, ids []string, err error) {
	if err != nil {
		r.disp.printf("  %s: its agent added %s to the plan in its worktree, which could not be added to the run's plan: %v", story, strings.Join(ids, ", "), err)
		return
	}
	r.disp.printf("  %s: its agent added %s to the plan in its worktree: added to the run's plan, with its landing", story, strings.Join(ids, ", "))
	if r.reopen != nil {
		r.reopen()
	}
}
