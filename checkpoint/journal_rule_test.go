package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// TestJournalRuleEveryCombination: with the journal on, a rollback discards
// only commits journaled as made by the session rolling back. The
// checkpoint and the rollback run inside a session ("s1") or outside any
// (""); the commit since the checkpoint is made by s1, by another session
// (s2) or outside any. Outside a session nothing is provably the
// rollback's own. --discard-foreign goes ahead in every case and still
// saves the commit; with the journal off the ancestry check is the rule.
func TestJournalRuleEveryCombination(t *testing.T) {
	for _, cpIn := range []string{"s1", ""} {
		for _, rbIn := range []string{"s1", ""} {
			for _, by := range []string{"s1", "s2", ""} {
				allowed := rbIn != "" && by == rbIn
				name := fmt.Sprintf("checkpoint %s, commit %s, rollback %s", where(cpIn), where(by), where(rbIn))
				t.Run(name, func(t *testing.T) {
					r := newRepo(t)
					r.installJournalHook()
					cp := mustSave(t, r, cpIn)
					sha := r.sessionCommit(by, "work.txt", "work\n")
					if !allowed {
						wantRefused(t, r, RollbackOptions{Session: rbIn}, "--discard-foreign")
					}
					res, err := r.st.Rollback(ctx, RollbackOptions{Session: rbIn, DiscardForeign: !allowed})
					if err != nil {
						t.Fatal(err)
					}
					if r.git("rev-parse", "HEAD") != cp.Head || r.exists("work.txt") {
						t.Fatal("not rolled back")
					}
					if got := r.git("rev-parse", res.BackupRef+"^1"); got != sha {
						t.Fatalf("backup holds %s, want the discarded commit %s", got, sha)
					}
				})
			}
		}
	}
	t.Run("journal off", func(t *testing.T) {
		r := newRepo(t)
		cp := mustSave(t, r, "")
		r.sessionCommit("s2", "work.txt", "work\n")
		if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
			t.Fatalf("with the journal off the ancestry check is the rule: %v", err)
		}
		if r.git("rev-parse", "HEAD") != cp.Head {
			t.Fatal("not rolled back")
		}
	})
}

func where(session string) string {
	if session == "" {
		return "outside"
	}
	return "in " + session
}

// TestRollbackRefusesEditedCheckpointRecord: checkpoint.json is edited so
// its head names a commit older than the real checkpoint. Trusting it
// would discard the user's commit made before the checkpoint; the record
// disagrees with wiggum's own ref, so the rollback refuses and changes
// nothing, with or without --discard-foreign.
func TestRollbackRefusesEditedCheckpointRecord(t *testing.T) {
	for _, dirty := range []bool{false, true} {
		t.Run(fmt.Sprintf("dirty=%v", dirty), func(t *testing.T) {
			r := newRepo(t)
			old := r.git("rev-parse", "HEAD")
			r.commit("user.txt", "made before the checkpoint\n", "user work")
			if dirty {
				r.write("notes.txt", "uncommitted\n")
			}
			cp := mustSave(t, r, "")
			r.commit("agent.txt", "agent\n", "agent work")

			path, _ := r.st.Runtime(layout.CheckpointFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(data), cp.Head, old, 1)
			if edited == string(data) {
				t.Fatal("could not edit the record")
			}
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			wantRefused(t, r, RollbackOptions{}, "does not match what wiggum recorded")
			wantRefused(t, r, RollbackOptions{DiscardForeign: true}, "does not match what wiggum recorded")
			if r.read("user.txt") != "made before the checkpoint\n" {
				t.Fatal("the user's commit is gone")
			}
		})
	}
}

func TestRollbackRefusesCheckpointWithoutItsRef(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	r.commit("a.txt", "a\n", "a")
	r.git("update-ref", "-d", "refs/wiggum/checkpoints/main")
	wantRefused(t, r, RollbackOptions{}, "is missing")
}

// TestJournalEntriesCountsWithoutDecodingAll: the status count agrees with
// Journal for a journal of many entries, is 0 without one, and a torn last
// line is a *CorruptError as Journal reports it.
func TestJournalEntriesCountsWithoutDecodingAll(t *testing.T) {
	r := newRepo(t)
	if n, err := r.st.JournalEntries(); n != 0 || err != nil {
		t.Fatalf("no journal: %d, %v", n, err)
	}
	path, err := r.st.Runtime(layout.JournalFile)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, `{"sha":"%040x","session":"s","time":"2026-11-23T00:00:00Z"}`+"\n", i)
		if i == 100 {
			b.WriteString("\n") // blank lines are no entries
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := r.st.Journal()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.st.JournalEntries(); n != len(entries) || n != 5000 || err != nil {
		t.Fatalf("JournalEntries %d, %v; Journal has %d", n, err, len(entries))
	}
	if err := os.WriteFile(path, []byte(b.String()+`{"sha":"0123`), 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *statefile.CorruptError
	if _, err := r.st.JournalEntries(); !errors.As(err, &ce) {
		t.Fatalf("torn last line: %v, want a *CorruptError", err)
	}
}

// wiggum's post-commit hook in a working tree wiggum never ran in (hooks
// installed into a core.hooksPath every repository shares) records
// nothing and creates nothing; once a session has been there, every
// commit is journaled.
func TestJournalOnlyWhereWiggumRan(t *testing.T) {
	r := newRepo(t)
	r.installJournalHook()
	r.commit("a", "a\n", "before wiggum")
	if err := r.st.RecordCommit(ctx); err != nil {
		t.Fatal(err)
	}
	if r.exists(".ralph") {
		t.Fatal("the post-commit hook made .ralph in a tree wiggum never ran in")
	}
	mustSave(t, r, "")
	sha := r.sessionCommit("", "b", "b\n")
	j, err := r.st.Journal()
	if err != nil || len(j) != 1 || j[0].SHA != sha {
		t.Fatalf("journal after the first checkpoint: %+v, %v", j, err)
	}
}
