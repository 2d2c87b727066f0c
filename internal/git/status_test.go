package git

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestStatusClean(t *testing.T) {
	dir := testRepo(t)
	write(t, dir, "build.log", "ignored\n")
	st, err := (&Repo{Root: dir}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirty() || st.Branch != "refs/heads/main" || st.Head != gitT(t, dir, "rev-parse", "HEAD") {
		t.Fatalf("clean tree read as %+v", st)
	}
}

func TestStatusEveryKindOfChange(t *testing.T) {
	dir := testRepo(t)
	write(t, dir, "a.txt", "staged\n")
	gitT(t, dir, "add", "a.txt")
	write(t, dir, "a.txt", "staged, then changed again\n")
	gitT(t, dir, "mv", "b.txt", "renamed.txt")
	write(t, dir, "new dir/with space.txt", "untracked\n")
	write(t, dir, "x.log", "ignored\n")
	st, err := (&Repo{Root: dir}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Dirty() {
		t.Fatal("not dirty")
	}
	got := map[string]Change{}
	for _, c := range st.Changes {
		got[c.Path] = c
	}
	headOID := func(p string) string { return gitT(t, dir, "rev-parse", "HEAD:"+p) }
	zero := strings.Repeat("0", 40)
	want := map[string]Change{
		"a.txt":       {Path: "a.txt", Staged: true, Unstaged: true, HeadMode: "100644", WorktreeMode: "100644", HeadOID: headOID("a.txt")},
		"b.txt":       {Path: "b.txt", Staged: true, HeadMode: "100644", WorktreeMode: "000000", HeadOID: headOID("b.txt")},
		"renamed.txt": {Path: "renamed.txt", Staged: true, HeadMode: "000000", WorktreeMode: "100644", HeadOID: zero},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(st.Untracked, []string{"new dir/with space.txt"}) {
		t.Fatalf("untracked %q", st.Untracked)
	}
	paths := st.Paths()
	sort.Strings(paths)
	if strings.Join(paths, ",") != "a.txt,b.txt,new dir/with space.txt,renamed.txt" {
		t.Fatalf("paths %q", paths)
	}
}

func TestStatusUnstagedOnlyAndDeleted(t *testing.T) {
	dir := testRepo(t)
	write(t, dir, "a.txt", "changed\n")
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	st, err := (&Repo{Root: dir}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Changes {
		if c.Staged || !c.Unstaged {
			t.Fatalf("%+v: only the working tree changed", c)
		}
	}
	if len(st.Changes) != 2 {
		t.Fatalf("changes %+v", st.Changes)
	}
}

func TestStatusUnmergedDetachedAndInitial(t *testing.T) {
	dir := testRepo(t)
	gitT(t, dir, "switch", "-q", "-c", "other")
	write(t, dir, "a.txt", "other\n")
	gitT(t, dir, "commit", "-q", "-am", "other")
	gitT(t, dir, "switch", "-q", "main")
	write(t, dir, "a.txt", "main\n")
	gitT(t, dir, "commit", "-q", "-am", "main")
	gitT(t, dir, "switch", "-q", "--detach")
	cmd := []string{"merge", "other"}
	if _, err := (&Repo{Root: dir}).Run(ctx, cmd...); err == nil {
		t.Fatal("the merge should conflict")
	}
	st, err := (&Repo{Root: dir}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Branch != "" || st.Head == "" {
		t.Fatalf("detached: %+v", st)
	}
	if len(st.Changes) != 1 || !st.Changes[0].Unmerged || !st.Changes[0].Staged || st.Changes[0].Path != "a.txt" {
		t.Fatalf("unmerged: %+v", st.Changes)
	}

	empty := t.TempDir()
	gitT(t, empty, "init", "-q", "-b", "trunk")
	st, err = (&Repo{Root: empty}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Head != "" || st.Branch != "refs/heads/trunk" || st.Dirty() {
		t.Fatalf("no commits yet: %+v", st)
	}
}

func TestParseStatusRename(t *testing.T) {
	// Rename records, which --no-renames never asks for, are still read
	// whole: the source path is a record of its own.
	out := "# branch.oid " + strings.Repeat("a", 40) + "\x00# branch.head main\x00" +
		"2 R. N... 100644 100644 100644 " + strings.Repeat("b", 40) + " " + strings.Repeat("b", 40) + " R100 new name.txt\x00old.txt\x00"
	st, err := ParseStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Changes) != 2 || st.Changes[0].Path != "new name.txt" || st.Changes[1].Path != "old.txt" {
		t.Fatalf("%+v", st.Changes)
	}
}

func TestParseStatusRejectsWhatItDoesNotKnow(t *testing.T) {
	for _, bad := range []string{
		"garbage\x00",
		"1 M. N...\x00",                  // too few fields
		"2 R. N... 1 2 3 a b R100 x\x00", // rename without its source
		"u UU N... 1 2\x00",
		"! ignored.log\x00",
		// Names git never writes into an index: one made by hand.
		"1 A. N... 000000 100644 100644 0000000000000000000000000000000000000000 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 sub/../../x\x00",
		"1 .M N... 100644 100644 100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 .git/hooks/pre-commit\x00",
		"1 .M N... 100644 100644 100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 /etc/passwd\x00",
		"1 .M N... 100644 100644 100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 a/.GIT/config\x00",
		"2 R. N... 100644 100644 100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 R100 new\x00../old\x00",
		"? ./x\x00",
		"? a//\x00",
	} {
		if st, err := ParseStatus(bad); err == nil {
			t.Errorf("%q read as %+v", bad, st)
		}
	}
}

// Odd names git does write are paths: dots inside a name, a leading dot,
// .gitignore, a name with spaces and non-ASCII.
func TestTreePath(t *testing.T) {
	for _, ok := range []string{"a", ".gitignore", "a/.github/x", "..a", "a..", "a b/ü", ".env", "x/.git-keep"} {
		if !TreePath(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "/a", "a//b", "a/", "./a", "a/./b", "../a", "a/..", ".git", ".Git/x", "a/.git/b", "a\x00b"} {
		if TreePath(bad) {
			t.Errorf("%q taken for a path in the tree", bad)
		}
	}
}

// A nested repository is an untracked name with a trailing slash: a path.
func TestParseStatusNestedRepository(t *testing.T) {
	st, err := ParseStatus("? vendored/lib/\x00? notes.txt\x00")
	if err != nil || len(st.Untracked) != 2 || st.Untracked[0] != "vendored/lib/" {
		t.Fatalf("%+v, %v", st, err)
	}
}

func TestRefreshStatusWritesBackStatData(t *testing.T) {
	dir := testRepo(t)
	// Touch a file without changing it: its stat data in the index is stale.
	p := filepath.Join(dir, "a.txt")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	stale := gitT(t, dir, "ls-files", "--debug", "a.txt")
	r := &Repo{Root: dir}
	if _, err := r.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "ls-files", "--debug", "a.txt"); got != stale {
		t.Fatal("Status wrote the index")
	}
	st, err := r.StartRefreshStatus(ctx)()
	if err != nil || st.Dirty() {
		t.Fatalf("%+v %v", st, err)
	}
	if got := gitT(t, dir, "ls-files", "--debug", "a.txt"); got == stale {
		t.Fatal("StartRefreshStatus left the stale stat data")
	}
}

// A submodule's record says what changed in its checkout: S<c><m><u>.
func TestParseStatusSubmoduleFlags(t *testing.T) {
	link := " 160000 160000 160000 " + strings.Repeat("a", 40) + " " + strings.Repeat("a", 40) + " "
	st, err := ParseStatus("1 .M S.M." + link + "edited\x001 .M S..U" + link + "new\x001 .M SC.." + link + "moved\x00")
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Changes[0]; !c.Submodule || !c.SubModified || c.SubUntracked {
		t.Errorf("S.M.: %+v", c)
	}
	if c := st.Changes[1]; !c.SubUntracked || c.SubModified {
		t.Errorf("S..U: %+v", c)
	}
	if c := st.Changes[2]; !c.SubCommit || c.SubModified || c.SubUntracked {
		t.Errorf("SC..: %+v", c)
	}
	if got := st.UncommittedInSubmodules(); len(got) != 2 {
		t.Errorf("UncommittedInSubmodules = %v", got)
	}
}
