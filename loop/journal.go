package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// JournalFile is the run journal, in the runtime directory. It is an
// append-only log rather than a state file rewritten whole: each record is
// one line (JSON, a tab, the CRC-32C of the JSON) written with a single
// write and fsynced before the loop acts on what it records, so a record
// costs the same at story 10 and story 10,000 and a crash can only ever cut
// the last line short - which the next reader recognises by its missing
// newline or checksum and drops. An append that fails (a full disk) takes
// back what it wrote, and a record an older wiggum left torn that way
// before a whole one is dropped (afterTorn). A damaged line anywhere else
// makes the journal corrupt: a *statefile.CorruptError naming the file,
// never "no run".
const JournalFile = "run-journal.jsonl"

// journalRec is one journal line. T is the kind:
//
//	run    a run (or a resumed run) started: plan, session, budgets
//	start  an attempt at a story started (in a worktree, for a worker)
//	pass   an attempt finished: its agent exited 0 and its checks passed,
//	       so only its commit and tick (a worktree's: its end and landing)
//	       are left (a resume finishes those rather than redo the story)
//	usage  what an attempt's agent reported it cost, before the attempt's
//	       end: at its stream's result, and when it exited 0 (a resume
//	       after a kill keeps it in the run's spending)
//	fail   an attempt in the main tree failed, before its rollback: what
//	       failed it (a resume after a kill in the rollback records the
//	       failure from it, counted, with its context)
//	end    an attempt ended: outcome, cost, tokens, backup, failure context
//	dirty  the paths a run leaves out of every commit (dirty before it)
//	merge  a worker's branch landed in the target (with the plan tick)
//	keptbranch  a worker's finished branch could not land (a conflict, a
//	       blocked merge, a landing the server refused) and is kept for
//	       the person to merge: the story is not done. Only the run's
//	       account for wiggum status reads it; a resume replays the
//	       journal as if it were not there
//	drop   a story the plan no longer has was dropped on resume
//	stuck  the run stopped on an attempt it could not roll back (a full
//	       disk): why (Note); the journal stays open, to be resumed once
//	       that is mended
//	close  the run ended by itself; the next run starts afresh
type journalRec struct {
	T       string    `json:"t"`
	Time    time.Time `json:"time"`
	Story   string    `json:"story,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Iter    int       `json:"iter,omitempty"`

	// run
	Plan         string  `json:"plan,omitempty"`
	Kind         string  `json:"kind,omitempty"`
	Session      string  `json:"session,omitempty"`
	PID          int     `json:"pid,omitempty"`
	Workers      int     `json:"workers,omitempty"`
	Remote       string  `json:"remote,omitempty"` // --remote's name
	MaxCost      float64 `json:"max_cost,omitempty"`
	MaxStoryCost float64 `json:"max_story_cost,omitempty"`

	// start
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
	// OnBranch is the branch (full ref) the attempt's checkpoint was taken
	// on, "" detached: with Commit, the whole of a clean checkpoint, which
	// a resume puts back when an agent's rm -rf .ralph took its record.
	OnBranch string `json:"on_branch,omitempty"`
	Detached bool   `json:"detached,omitempty"`

	// end
	Outcome string `json:"outcome,omitempty"` // done, failed, limit, interrupted
	Source  string `json:"source,omitempty"`
	Command string `json:"command,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Output  string `json:"output,omitempty"` // tail, for the retry prompt
	Commit  string `json:"commit,omitempty"`
	// Head, on a done attempt in a worktree, is the full commit its
	// branch ended at: a resume lands the branch of a story that finished
	// and never landed only while its tip is still exactly this. On a
	// pass, it is the commit HEAD was at when the checks passed.
	Head   string  `json:"head,omitempty"`
	Backup string  `json:"backup,omitempty"`
	Cost   float64 `json:"cost_usd,omitempty"`
	In     int     `json:"input_tokens,omitempty"`
	Out    int     `json:"output_tokens,omitempty"`

	// drop, close
	Note string `json:"note,omitempty"`

	// dirty
	Paths []string `json:"paths,omitempty"`
}

// castagnoli is built on first use: making the table (SSE4.2 slicing
// tables) costs more than a hook call's whole start-up, and every wiggum
// process would pay it at init whether it touches a journal or not.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func encodeRec(r journalRec) ([]byte, error) {
	js, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(js)+10)
	line = append(line, js...)
	line = append(line, '\t')
	line = append(line, fmt.Sprintf("%08x", crc32.Checksum(js, castagnoli()))...)
	return append(line, '\n'), nil
}

// decodeLine checks and decodes one line (without its newline).
func decodeLine(line []byte) (journalRec, error) {
	var r journalRec
	i := bytes.LastIndexByte(line, '\t')
	if i < 0 {
		return r, errors.New("no checksum")
	}
	sum, err := strconv.ParseUint(string(line[i+1:]), 16, 32)
	if err != nil || len(line)-i-1 != 8 {
		return r, errors.New("bad checksum field")
	}
	if crc32.Checksum(line[:i], castagnoli()) != uint32(sum) {
		return r, errors.New("checksum mismatch")
	}
	if err := json.Unmarshal(line[:i], &r); err != nil {
		return r, err
	}
	if r.T == "" {
		return r, errors.New("record without a kind")
	}
	return r, nil
}

// readJournal returns the records of path and the length of its intact
// prefix. A missing file is no records; a torn last line is dropped (torn
// reports it), and so is a torn record a whole one follows on its line
// (afterTorn); other damage before the last line is a
// *statefile.CorruptError.
func readJournal(path string) (recs []journalRec, good int64, torn bool, err error) {
	data, err := statefile.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("run journal: %w", err)
	}
	if len(data) == 0 {
		return nil, 0, false, &statefile.CorruptError{Path: path, Err: errors.New("the run journal is empty (a run journal always starts with its run record)")}
	}
	off := 0
	for n := 1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			// Cut short by a crash mid-write: that record was never
			// acted on.
			return recs, int64(off), true, nil
		}
		line := data[off : off+end]
		r, derr := decodeLine(line)
		if derr != nil && n > 1 {
			if off+end+1 == len(data) && tornTail(line) {
				return recs, int64(off), true, nil
			}
			if whole, ok := afterTorn(line); ok {
				r, derr = whole, nil
			}
		}
		if derr != nil {
			return nil, 0, false, &statefile.CorruptError{Path: path, Err: fmt.Errorf("line %d: %w", n, derr)}
		}
		if n == 1 && r.T != "run" {
			return nil, 0, false, &statefile.CorruptError{Path: path, Err: fmt.Errorf("line 1 is a %q record, not the run record", r.T)}
		}
		recs = append(recs, r)
		off += end + 1
	}
	return recs, int64(off), false, nil
}

// recStart is how every record's JSON begins; json.Marshal escapes the
// quotes of a string, so it appears nowhere else in a line.
var recStart = []byte(`{"t":"`)

// afterTorn reads a damaged line that is the start of a record a failed
// write cut short (an older wiggum left it there when the disk was full)
// followed by a whole record, appended once space was back: that record,
// the torn one never having been acted on.
func afterTorn(line []byte) (journalRec, bool) {
	i := bytes.LastIndex(line, recStart)
	if i <= 0 || !bytes.HasPrefix(line, recStart) {
		return journalRec{}, false
	}
	r, err := decodeLine(line[i:])
	return r, err == nil
}

// tornTail reports whether a damaged last line looks like a write that a
// crash cut short and the file system padded (zeros), rather than an edit.
func tornTail(line []byte) bool {
	i := bytes.IndexByte(line, 0)
	return i >= 0
}

// journal appends records to the run journal; safe for concurrent workers.
type journal struct {
	mu   sync.Mutex
	path string
	// link is the journal's second name, in the git directory (""
	// for none): an agent's rm -rf .ralph leaves it, for the resume.
	link string
	f    *os.File
	// sync: fsync each record. Off only in tests of the format.
	sync bool
	// cut, when not -1, is where the journal ends: a failed append's
	// bytes after it could not be taken back yet (drop).
	cut int64
}

// openJournal opens path for appending, cutting off a torn tail first so
// the next record starts on a line of its own.
func openJournal(path string, good int64) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run journal: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() != good {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("run journal: drop the torn last record: %w", err)
		}
	}
	if _, err := f.Seek(good, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("run journal: %w", err)
	}
	return &journal{path: path, f: f, sync: true, cut: -1}, nil
}

// add appends r; durable says whether the loop is about to act on it
// (fsync) or it only informs (written, flushed by the kernel in time).
func (j *journal) add(r journalRec, durable bool) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	line, err := encodeRec(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cut >= 0 {
		// An earlier append failed and its bytes could not be taken back
		// then: they are, before this record goes after them.
		if err := j.takeBack(j.cut); err != nil {
			return fmt.Errorf("run journal %s: take back a record a failed write cut short: %w", j.path, err)
		}
	}
	off, err := j.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("run journal %s: %w", j.path, err)
	}
	_, err = j.f.Write(line)
	if err == nil && durable && j.sync {
		err = j.f.Sync()
	}
	if err != nil {
		// A full disk writes what fits in the file's last block and fails
		// the rest: the part written is taken back (a truncate needs no
		// free space), so a failed append leaves the journal as it was and
		// the next record, once space is back, starts a line of its own.
		if derr := j.takeBack(off); derr != nil {
			j.cut = off // tried again before the next record
		}
		return fmt.Errorf("run journal %s: %w", j.path, err)
	}
	return nil
}

// takeBack cuts the journal back to its first off bytes, where the next
// record goes.
func (j *journal) takeBack(off int64) error {
	if err := j.f.Truncate(off); err != nil {
		return err
	}
	if _, err := j.f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	j.cut = -1
	return nil
}

// keep puts the journal back at its path when something deleted or
// replaced it while the run held it open (an agent's rm -rf .ralph): the
// run's records would go on into a file no name reaches, and a resume
// after a crash would find no journal - not the attempt it left open. The
// records written so far are copied to a new file in its place, which the
// journal appends to from then on. It reports whether it did.
func (j *journal) keep() (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	held, err := j.f.Stat()
	if err != nil {
		return false, fmt.Errorf("run journal %s: %w", j.path, err)
	}
	if now, err := os.Stat(j.path); err == nil && os.SameFile(now, held) {
		return false, nil
	}
	size := held.Size()
	if j.cut >= 0 && j.cut < size {
		size = j.cut // not a failed append's bytes
	}
	data := make([]byte, size)
	if _, err := j.f.ReadAt(data, 0); err != nil {
		return false, fmt.Errorf("run journal %s: read back: %w", j.path, err)
	}
	if err := statefile.Write(j.path, data); err != nil { // the directory too
		return false, fmt.Errorf("run journal %s: put back: %w", j.path, err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("run journal %s: %w", j.path, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return false, fmt.Errorf("run journal %s: %w", j.path, err)
	}
	j.f.Close()
	j.f, j.cut = f, -1
	layout.LinkSecondName(j.path, j.link)
	return true, nil
}

// JournalLink is the run journal's second name, in the main tree's git
// directory: a hard link made when the run opens its journal.
const JournalLink = "wiggum-run-journal"

// ReadRepoRunState is ReadRunState of the repository st's run journal: at
// its path, or by its second name when an agent's rm -rf .ralph took it
// (the next run puts it back: restoreJournal). A damaged journal's error
// names both names, and the way to start over.
func ReadRepoRunState(st *checkpoint.State) (*RunState, error) {
	path, link := st.RuntimePath(JournalFile), journalLink(st)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if _, _, _, err := readJournal(link); !isCorrupt(err) {
			path = link
		}
		// else: the person moved the damaged journal aside, and the next
		// run drops its second name (restoreJournal): no run to show.
	}
	rs, err := ReadRunState(path)
	return rs, journalAdvice(err, link)
}

func isCorrupt(err error) bool {
	var corrupt *statefile.CorruptError
	return errors.As(err, &corrupt)
}

// journalAdvice makes a damaged journal's error say what gets past it:
// moving the file aside alone did not, while its second name link brought
// it back.
func journalAdvice(err error, link string) error {
	var corrupt *statefile.CorruptError
	if !errors.As(err, &corrupt) {
		return err
	}
	c := *corrupt
	c.Advice = fmt.Sprintf("inspect or move it aside, then run again (its second name %s is dropped with it); or start over with wiggum run --fresh, which keeps it aside", link)
	return &c
}

// setJournalAside moves a damaged journal at path out of the way for
// --fresh, kept beside it under a name that says what it is; the new
// journal takes over its second name when it is linked.
func setJournalAside(path string) (string, error) {
	aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("run journal: keep the damaged journal aside: %w", err)
	}
	return aside, nil
}

// journalLink is the run journal's second name in the repository st.
func journalLink(st *checkpoint.State) string {
	return filepath.Join(st.Repo.GitDir, JournalLink)
}

// restoreJournal puts the journal back at path from its second name when
// path is gone (an agent's rm -rf .ralph while the run that kept it was
// killed, before it could put it back itself); it reports whether it did.
// A second name that does not read is not put back but removed: the
// person moved the damaged journal aside, as its error told them, and its
// second name goes with it - put back, it would refuse the run again.
func restoreJournal(path, link string) bool {
	if link == "" {
		return false
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if _, err := os.Stat(link); err != nil {
		return false
	}
	if _, _, _, err := readJournal(link); err != nil {
		if isCorrupt(err) {
			_ = os.Remove(link)
		}
		return false
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false
	}
	return os.Link(link, path) == nil
}

// drop closes the journal and removes it, and its second name when that
// is still the same file.
func (j *journal) drop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	held, err := j.f.Stat()
	j.f.Close()
	if err != nil {
		return
	}
	for _, name := range []string{j.path, j.link} {
		if fi, err := os.Stat(name); name != "" && err == nil && os.SameFile(fi, held) {
			_ = os.Remove(name)
		}
	}
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// rewrite replaces the journal with recs (compaction on resume), atomically.
func rewriteJournal(path string, recs []journalRec) (int64, error) {
	var buf bytes.Buffer
	for _, r := range recs {
		line, err := encodeRec(r)
		if err != nil {
			return 0, err
		}
		buf.Write(line)
	}
	if err := statefile.Write(path, buf.Bytes()); err != nil {
		return 0, fmt.Errorf("run journal: %w", err)
	}
	return int64(buf.Len()), nil
}

// RunState is what the run journal says about the repository's last run,
// for `wiggum status`.
type RunState struct {
	// Open: the run did not end by itself (killed, interrupted, stopped by
	// a usage limit) or is running now.
	Open        bool      `json:"open"`
	Interrupted bool      `json:"interrupted"` // open and no live run holds the lock
	Plan        string    `json:"plan"`
	Kind        string    `json:"kind,omitempty"`
	Workers     int       `json:"workers"`
	Remote      string    `json:"remote,omitempty"` // the git remote a --remote run shares its plan through
	Started     time.Time `json:"started"`
	Runs        int       `json:"runs"` // the first start and each resume
	// Done: stories the run landed - committed with their tick, or merged
	// (landed) in the target - not those whose finished branch it kept.
	Done []string `json:"done"`
	// Kept: finished stories whose branch could not land (a conflict) and
	// is kept for the person to merge, as the run's summary lists them.
	Kept []string `json:"kept,omitempty"`
	// Finished: stories whose attempt in the main tree finished (its agent
	// exited 0 and its checks passed) and whose commit a kill cut short;
	// the resumed run commits them with their tick, without the agent. (A
	// worktree's such attempt is landed when its worktree is as the
	// attempt left it, which only the resume judges.)
	Finished []string `json:"finished,omitempty"`
	// CutOff: stories whose attempt in the main tree the kill cut off
	// before it finished; the resume rolls the tree back to that
	// attempt's checkpoint first (saving everything in a backup).
	CutOff       []string `json:"cut_off,omitempty"`
	Failed       int      `json:"failed_attempts"`
	Interrupts   int      `json:"interrupted_attempts"`
	SpentUSD     float64  `json:"spent_usd"`
	MaxCost      float64  `json:"max_cost_usd,omitempty"`
	MaxStoryCost float64  `json:"max_story_cost_usd,omitempty"`
	Resume       string   `json:"resume_command,omitempty"`
	// Waiting: the last attempt ended on a usage limit or a model-service
	// outage, in the agent's words; what a resume waits for, if open.
	Waiting string `json:"waiting,omitempty"`
	// Stuck: the run stopped on an attempt whose rollback failed (a full
	// disk), in its words; mended, a resume finishes that attempt.
	Stuck string `json:"stuck,omitempty"`
	// Ended and Outcome: when a run that ended by itself ended, and how
	// ("done", or why it stopped).
	Ended   time.Time `json:"ended,omitzero"`
	Outcome string    `json:"outcome,omitempty"`
}

// ReadRunState reads the run journal under root's runtime directory: nil
// when there is none, a *statefile.CorruptError naming the file when it is
// damaged.
func ReadRunState(journalPath string) (*RunState, error) {
	recs, _, _, err := readJournal(journalPath)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	l := newLedger()
	rs := &RunState{Open: recs[len(recs)-1].T != "close", Plan: recs[0].Plan, Kind: recs[0].Kind, Started: recs[0].Time, Done: []string{}}
	for _, r := range recs {
		l.replay(r)
		switch {
		case r.T == "run":
			rs.Runs++
			rs.Workers, rs.Remote = r.Workers, r.Remote
			rs.Stuck = ""
		case r.T == "stuck":
			rs.Stuck = r.Note
		case r.T == "close":
			rs.Ended, rs.Outcome = r.Time, r.Note
		case r.T == "end" && r.Outcome == "limit":
			rs.Waiting = r.Detail
		case r.T == "end":
			rs.Waiting = ""
		}
	}
	for id, b := range l.stories {
		_, kept := l.keptBranch[id]
		_, merged := l.merged[id]
		switch {
		case kept:
			rs.Kept = append(rs.Kept, id)
		case b.done || merged:
			rs.Done = append(rs.Done, id)
		}
		rs.Failed += b.failed
		rs.Interrupts += b.interrupted
	}
	for id := range l.merged {
		// A branch an earlier run kept, landed by this one (landKept):
		// no attempt of this run's, done all the same.
		if _, booked := l.stories[id]; !booked {
			rs.Done = append(rs.Done, id)
		}
	}
	for id := range l.passed {
		// A worktree's is landed only if its worktree is still as the
		// attempt left it, which the resume judges: not promised here.
		if l.open[id].Worktree == "" {
			rs.Finished = append(rs.Finished, id)
		}
	}
	for id, o := range l.open {
		// A run that stopped on an attempt it could not roll back
		// (Stuck) was not killed, and the resume does not roll back
		// past what stopped it.
		if _, passed := l.passed[id]; !passed && o.Worktree == "" && rs.Open && rs.Stuck == "" {
			rs.CutOff = append(rs.CutOff, id)
		}
	}
	sort.Strings(rs.Done)
	sort.Strings(rs.Kept)
	sort.Strings(rs.Finished)
	sort.Strings(rs.CutOff)
	// What open attempts' agents reported is spent too: a resume records
	// it as their end.
	pending, _, _ := l.pendingCost()
	rs.SpentUSD, rs.MaxCost, rs.MaxStoryCost = l.spent+pending, l.maxCost, l.maxStoryCost
	rs.Resume = resumeCommand(rs.Kind, rs.Plan, rs.Workers, rs.Remote)
	return rs, nil
}

// resumeCommand is the command that resumes an open run of plan (a file of
// kind "issues" or a plan file) with workers.
func resumeCommand(kind, plan string, workers int, remote string) string {
	cmd := "wiggum run --plan " + plan
	if kind == "issues" {
		cmd = "wiggum run --issues " + plan
	}
	if workers > 1 {
		cmd += fmt.Sprintf(" --workers %d", workers)
	}
	if remote != "" {
		cmd += " --remote " + remote
	}
	return cmd
}
