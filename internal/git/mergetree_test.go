package git

import (
	"slices"
	"testing"
)

const deleted = "\x00deleted"

// Two branches that each add an entry to the end of a log conflict in
// git; MergeTree keeps both entries, and only when every conflict is such
// an append: anything else is git's conflict, as it was.
func TestMergeTreeKeepsBothAppends(t *testing.T) {
	for _, c := range []struct {
		name      string
		base      map[string]string
		ours      map[string]string
		theirs    map[string]string
		attrs     string // the repository's .gitattributes, committed in the base
		want      map[string]string
		conflicts []string
	}{
		{name: "both appended",
			base:   map[string]string{"progress.txt": "# log\n"},
			ours:   map[string]string{"progress.txt": "# log\n## US-1\ndone\n"},
			theirs: map[string]string{"progress.txt": "# log\n## US-2\n"},
			want:   map[string]string{"progress.txt": "# log\n## US-1\ndone\n## US-2\n"}},
		{name: "both appended, in a directory, to an empty file",
			base:   map[string]string{"docs/log.md": ""},
			ours:   map[string]string{"docs/log.md": "a\n"},
			theirs: map[string]string{"docs/log.md": "b\n"},
			want:   map[string]string{"docs/log.md": "a\nb\n"}},
		{name: "a .gitignore both sides made",
			base:   map[string]string{"z.txt": "z\n"},
			ours:   map[string]string{"web/.gitignore": "node_modules/\n", "sub/.gitignore": "*.o\n"},
			theirs: map[string]string{"web/.gitignore": "dist/\n", "sub/.gitignore": "*.a\n"},
			want:   map[string]string{"web/.gitignore": "node_modules/\ndist/\n", "sub/.gitignore": "*.o\n*.a\n"}},
		{name: "another file both sides made",
			base:      map[string]string{"z.txt": "z\n"},
			ours:      map[string]string{"util.go": "package a\n"},
			theirs:    map[string]string{"util.go": "package b\n"},
			conflicts: []string{"util.go"}},
		{name: "one side changed a line",
			base:      map[string]string{"progress.txt": "# log\n"},
			ours:      map[string]string{"progress.txt": "# LOG\n## US-1\n"},
			theirs:    map[string]string{"progress.txt": "# log\n## US-2\n"},
			conflicts: []string{"progress.txt"}},
		{name: "an append beside a real conflict",
			base:      map[string]string{"progress.txt": "# log\n", "main.go": "package a\n"},
			ours:      map[string]string{"progress.txt": "# log\n1\n", "main.go": "package b\n"},
			theirs:    map[string]string{"progress.txt": "# log\n2\n", "main.go": "package c\n"},
			conflicts: []string{"main.go", "progress.txt"}},
		{name: "the base's last line unfinished",
			base:      map[string]string{"progress.txt": "# log"},
			ours:      map[string]string{"progress.txt": "# log\n1\n"},
			theirs:    map[string]string{"progress.txt": "# log\n2\n"},
			conflicts: []string{"progress.txt"}},
		{name: "the repository says how the file merges",
			base:      map[string]string{"progress.txt": "# log\n"},
			attrs:     "progress.txt merge=binary\n",
			ours:      map[string]string{"progress.txt": "# log\n1\n"},
			theirs:    map[string]string{"progress.txt": "# log\n2\n"},
			conflicts: []string{"progress.txt"}},
		{name: "entries that end alike, in files of odd names",
			base:   map[string]string{"my log*.txt": "# log\n", "z/progress.txt": "# log\n", "a.txt": "a\n"},
			ours:   map[string]string{"my log*.txt": "# log\n1\n---\n", "z/progress.txt": "# log\n1\n---\n", "a.txt": "a\nours\n"},
			theirs: map[string]string{"my log*.txt": "# log\n2\n---\n", "z/progress.txt": "# log\n2\n---\n"},
			want:   map[string]string{"my log*.txt": "# log\n1\n---\n2\n---\n", "z/progress.txt": "# log\n1\n---\n2\n---\n", "a.txt": "a\nours\n"}},
		{name: "one side deleted it",
			base:      map[string]string{"progress.txt": "# log\n"},
			ours:      map[string]string{"progress.txt": deleted},
			theirs:    map[string]string{"progress.txt": "# log\n2\n"},
			conflicts: []string{"progress.txt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testRepo(t)
			commit := func(files map[string]string) string {
				for p, body := range files {
					if body == deleted {
						gitT(t, dir, "rm", "-q", p)
						continue
					}
					write(t, dir, p, body)
				}
				gitT(t, dir, "add", "-A")
				gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "x")
				return gitT(t, dir, "rev-parse", "HEAD")
			}
			if c.attrs != "" {
				write(t, dir, ".gitattributes", c.attrs)
			}
			base := commit(c.base)
			ours := commit(c.ours)
			gitT(t, dir, "checkout", "-q", base)
			theirs := commit(c.theirs)
			r, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			m, err := r.MergeTree(ctx, ours, theirs)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(m.Conflicts)
			if c.conflicts != nil {
				if !slices.Equal(m.Conflicts, c.conflicts) || m.Tree != "" || m.Appended != nil {
					t.Fatalf("%+v, want the conflicts %v", m, c.conflicts)
				}
				return
			}
			if len(m.Conflicts) != 0 || m.Tree == "" || len(m.Appended) == 0 {
				t.Fatalf("%+v, want a clean merge", m)
			}
			for p, want := range c.want {
				if got := gitT(t, dir, "cat-file", "blob", m.Tree+":"+p) + "\n"; got != want && !(want == "" && got == "\n") {
					t.Errorf("%s merged to %q, want %q", p, got, want)
				}
			}
		})
	}
}
