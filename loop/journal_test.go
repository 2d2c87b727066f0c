package loop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An append the file system cuts short (a full disk: the kernel writes what
// fits in the file's last block, then ENOSPC) leaves no bytes of its record
// behind, so the next record - written once space is back - starts on a
// line of its own. Before, the part written stayed, the next record was
// appended to it, and the next run refused the journal as corrupt ("line 4:
// checksum mismatch"). The short write is made by RLIMIT_FSIZE, which cuts
// a write at the limit exactly as a full disk cuts it at the last block.
func TestJournalFailedAppendLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	j, err := openJournal(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.f.Close()
	if err := j.add(journalRec{T: "run", Plan: "plan.md", Session: "s"}, true); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	cut := lim
	cut.Cur = uint64(len(before)) + 100
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &cut); err != nil {
		t.Fatal(err)
	}
	err = j.add(journalRec{T: "fail", Story: "US-1", Attempt: 1, Output: strings.Repeat("o", 6000)}, true)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("the cut append: err = %v, want EFBIG", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, before) {
		t.Fatalf("the failed append left %d byte(s) in the journal", len(now)-len(before))
	}

	// Space is back: the next record is whole, and the journal reads.
	if err := j.add(journalRec{T: "stuck", Note: "no space"}, true); err != nil {
		t.Fatal(err)
	}
	recs, _, torn, err := readJournal(path)
	if err != nil || torn || len(recs) != 2 || recs[1].T != "stuck" {
		t.Fatalf("journal after the failed append: %d record(s), torn %v, %v", len(recs), torn, err)
	}
}

// A journal an older wiggum left with a torn record inside it (the part of
// a record a full disk cut short, then the next record on the same line)
// is what wiggum itself half-wrote, not an edit: the torn part is dropped,
// the record after it kept, and the next run resumes. A line that is damaged
// otherwise is still corrupt (TestJournalDamage).
func TestJournalTornRecordInside(t *testing.T) {
	st, p := newRepo(t, 1)
	o := opts(p, `cat >/dev/null; `+limitLine+`; exit 1`)
	if _, err := Run(context.Background(), st, o); !isStop(err) {
		t.Fatalf("limit stop: %v", err)
	}
	path := journalPath(t, st.Repo.Root)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn, _ := encodeRec(journalRec{T: "fail", Story: "US-1", Attempt: 1, Output: strings.Repeat("o", 3000)})
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	damaged := append(append(append([]byte{}, data[:last]...), torn[:2000]...), data[last:]...)
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	recs, _, _, err := readJournal(path)
	if err != nil || len(recs) != bytes.Count(data, []byte("\n")) {
		t.Fatalf("journal with a torn record inside: %d record(s), %v; want %d", len(recs), err, bytes.Count(data, []byte("\n")))
	}
	var out bytes.Buffer
	o = opts(p, `cat >/dev/null; echo ok > done.txt`)
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || !sum.Resumed || len(sum.Completed) != 1 {
		t.Fatalf("the run after the torn record: %+v, %v\n%s", sum, err, out.String())
	}
}
