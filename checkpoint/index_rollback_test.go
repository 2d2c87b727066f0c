package checkpoint

import (
	"slices"
	"testing"
)

// TestRollbackReturnsIndexEntries: an attempt that only changed the index
// - untracked a file the checkpoint tracks (git rm --cached, committed or
// only staged), or staged a change whose file it then put back - leaves
// files that are the checkpoint's; the rollback returns the index's
// entries too, and does not count a file it kept as removed.
func TestRollbackReturnsIndexEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		attempt func(r *testRepo)
		removed []string // what the rollback says it removed
	}{
		{"rm --cached, committed", func(r *testRepo) {
			r.git("rm", "-q", "--cached", "settings.json")
			r.git("commit", "-q", "-m", "untrack settings")
		}, nil},
		{"rm --cached, staged", func(r *testRepo) {
			r.git("rm", "-q", "--cached", "settings.json")
		}, nil},
		{"rm --cached and a new file", func(r *testRepo) {
			r.git("rm", "-q", "--cached", "settings.json")
			r.write("new.txt", "new\n")
		}, []string{"new.txt"}},
		{"staged, file put back", func(r *testRepo) {
			r.write("settings.json", "changed\n")
			r.git("add", "settings.json")
			r.write("settings.json", "secret\n")
		}, nil},
		{"untracked file added", func(r *testRepo) {
			r.write("added.txt", "added\n")
			r.git("add", "added.txt")
			r.write("README", "changed\n")
		}, nil}, // staged: listed in Files, as a tracked file
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			r.commit("settings.json", "secret\n", "settings")
			mustSave(t, r, "")
			tc.attempt(r)
			res, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true})
			if err != nil {
				t.Fatal(err)
			}
			if st := r.git("status", "--porcelain"); st != "" {
				t.Errorf("status after the rollback:\n%s", st)
			}
			if got := r.git("ls-files", "settings.json"); got != "settings.json" {
				t.Errorf("settings.json not in the index: %q", got)
			}
			if r.read("settings.json") != "secret\n" {
				t.Errorf("settings.json: %q", r.read("settings.json"))
			}
			if !slices.Equal(res.Removed, tc.removed) {
				t.Errorf("removed %q, want %q", res.Removed, tc.removed)
			}
			if r.exists("new.txt") || r.exists("added.txt") {
				t.Error("a new file is still there")
			}
		})
	}
}
