package checkpoint

import (
	"slices"
	"strings"
	"testing"
)

// An attempt that makes files and a .gitignore rule hiding them - an agent
// that runs npm install and adds node_modules/ to .gitignore - left them
// out of the rollback's snapshot and out of what it removed; with the
// checkpoint's .gitignore back they were new untracked files, and the next
// story's commit took them in. The rollback now saves them in a backup of
// their own and removes them; files the checkpoint's rules ignore too
// (an ignored build log) stay, as ever.
func TestRollbackRemovesFilesTheAttemptsIgnoreRulesHid(t *testing.T) {
	for _, c := range []struct{ name, ignore, rule string }{
		{"top .gitignore", ".gitignore", "node_modules/\n"},
		{"nested .gitignore", "web/.gitignore", "/node_modules/\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRepo(t)
			r.write("web/app.js", "app\n")
			r.git("add", ".")
			r.git("commit", "-q", "-m", "web")
			mustSave(t, r, "")
			dir := strings.TrimSuffix(c.ignore, ".gitignore")
			r.write(dir+"node_modules/dep/index.js", "dep\n")
			r.write(dir+"node_modules/dep/package.json", "{}\n")
			r.write("build.log", "an ignored log, ignored at the checkpoint too\n")
			before := ""
			if r.exists(c.ignore) {
				before = r.read(c.ignore)
			}
			r.write(c.ignore, before+c.rule)
			r.write("web/app.js", "changed\n")

			res, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{dir + "node_modules/dep/index.js", dir + "node_modules/dep/package.json"}
			if !slices.Equal(res.Unhidden, want) || res.UnhiddenBackup == "" {
				t.Fatalf("unhidden = %q in %q, want %q", res.Unhidden, res.UnhiddenBackup, want)
			}
			if r.exists(dir + "node_modules") {
				t.Errorf("%snode_modules is still there", dir)
			}
			if !r.exists("build.log") {
				t.Errorf("a file the checkpoint's rules ignore too was removed")
			}
			if got := r.git("status", "--porcelain"); got != "" {
				t.Errorf("the tree is not at the checkpoint:\n%s", got)
			}
			saved := r.git("ls-tree", "-r", "--name-only", res.UnhiddenBackup)
			for _, f := range want {
				if !strings.Contains(saved, f) {
					t.Errorf("%s is not in the backup %s:\n%s", f, res.UnhiddenBackup, saved)
				}
			}
			if notes := strings.Join(res.Notes(), "\n"); !strings.Contains(notes, "2 file(s) the attempt's .gitignore change had hidden") {
				t.Errorf("notes: %s", notes)
			}
		})
	}
}
