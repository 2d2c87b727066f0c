package checkpoint

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// TestDiffTreesIsGitsDiffTree: the rollback's own walk of two trees lists
// what `git diff-tree -r --no-renames --raw` lists, in its order, for every
// kind of difference: content, mode, symlinks, submodule entries, a file
// that became a directory and the reverse, names that sort around "/",
// empty trees, several pairs through one cat-file.
func TestDiffTreesIsGitsDiffTree(t *testing.T) {
	r := newRepo(t)
	blob := func(s string) string {
		cmd := exec.Command("git", "hash-object", "-w", "--stdin")
		cmd.Dir, cmd.Stdin = r.dir, strings.NewReader(s)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	// tree writes a tree holding entries ("mode path content"; content
	// is a commit id for mode 160000) through a private index.
	tree := func(entries ...string) string {
		idx := "GIT_INDEX_FILE=" + t.TempDir() + "/index"
		var info strings.Builder
		for _, e := range entries {
			f := strings.SplitN(e, " ", 3)
			id := f[2]
			if f[0] != "160000" {
				id = blob(f[2])
			}
			fmt.Fprintf(&info, "%s %s\t%s\n", f[0], id, f[1])
		}
		for _, args := range [][]string{{"update-index", "--add", "--index-info"}, {"write-tree"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env, cmd.Stdin = r.dir, append(cmd.Environ(), idx), strings.NewReader(info.String())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
			if args[0] == "write-tree" {
				return strings.TrimSpace(string(out))
			}
		}
		return ""
	}
	head := r.git("rev-parse", "HEAD")
	empty := tree()
	a := tree("100644 a x", "100644 a.b x", "100644 a-b y", "100755 run x", "120000 link target",
		"100644 d/e/f one", "100644 d/e/g two", "100644 d/h three", "100644 file-to-dir x",
		"100644 dir-to-file/x x", "100644 dir-to-file/y/z x", "160000 sub "+head, "100644 same/s s")
	b := tree("100644 a x2", "100644 a.b x", "100755 a-b y", "100644 run x", "120000 link other",
		"100644 d/e/f one", "100644 d/e/new n", "100644 d/h three!", "100644 file-to-dir/in x",
		"100644 dir-to-file dir", "160000 sub "+blob("not a commit"), "100644 same/s s", "100644 z/new n")
	pairs := [][2]string{{a, b}, {b, a}, {a, empty}, {empty, b}, {a, a}, {empty, empty}}

	got, err := diffTrees(r.st.Repo.Cat(ctx), nil, pairs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		out := r.git("-c", "core.abbrev=no", "diff-tree", "-r", "-z", "--no-renames", "--raw", p[0], p[1])
		var want []string
		recs := strings.Split(strings.Trim(out, "\x00"), "\x00")
		for k := 0; k+1 < len(recs); k += 2 {
			meta := strings.Fields(strings.TrimPrefix(recs[k], ":"))
			c := recs[k+1]
			if meta[4] != "D" {
				c += " " + meta[1] + " " + meta[3]
			}
			want = append(want, c)
		}
		var have []string
		for _, c := range got[i] {
			s := c.path
			if c.mode != "" {
				s += " " + c.mode + " " + c.oid
			}
			have = append(have, s)
		}
		if strings.Join(have, "\n") != strings.Join(want, "\n") {
			t.Errorf("pair %d:\nwiggum: %q\ngit:    %q", i, have, want)
		}
	}
	// With every tree of the pairs known (read beforehand, under any
	// name, among objects that are no trees), the walk reads nothing - it
	// has no cat-file - and lists the same.
	names := []string{head, "no-such-object"}
	for _, id := range []string{a, b, empty} {
		names = append(names, id)
		for _, l := range strings.Split(r.git("ls-tree", "-r", "-d", id), "\n") {
			if f := strings.Fields(l); len(f) == 4 && f[1] == "tree" {
				names = append(names, id+":"+f[3])
			}
		}
	}
	objs, err := r.st.Repo.Batch(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]git.Object{}
	for i, o := range objs {
		known[names[i]] = o
	}
	again, err := diffTrees(nil, known, pairs...)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(got) {
		t.Errorf("with known trees:\n%v\nread:\n%v", again, got)
	}
	if len(got[0]) < 10 {
		t.Fatalf("the trees differ in too few ways to test anything: %v", got[0])
	}
}
