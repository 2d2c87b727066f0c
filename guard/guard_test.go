package guard

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

type guardCase struct {
	line    int
	want    Action
	branch  string
	why     string
	command string
	files   map[string]string // script files on disk, by absolute path
}

// policy is testPolicy with the case's files readable through ReadFile.
func (c guardCase) policy() Policy {
	p := testPolicy(c.branch)
	p.ReadFile = mapReader(c.files)
	p.ReadDir = mapDirs(c.files)
	return p
}

// mapDirs lists the directories an in-memory map's files are in, as the
// hooks list the disk.
func mapDirs(files map[string]string) func(string) ([]string, error) {
	return func(dir string) ([]string, error) {
		seen := map[string]bool{}
		var out []string
		for name := range files {
			rest, ok := strings.CutPrefix(name, strings.TrimSuffix(dir, "/")+"/")
			if sub, _, deeper := strings.Cut(rest, "/"); ok && deeper && !seen[sub] {
				seen[sub] = true
				out = append(out, sub)
			}
		}
		if len(out) == 0 {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
		}
		sort.Strings(out)
		return out, nil
	}
}

// mapReader reads files from an in-memory map, as the hooks read the disk.
func mapReader(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		text, ok := files[name]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return []byte(text), nil
	}
}

// readCorpus parses a corpus file (testdata/corpus.txt's format).
func readCorpus(t testing.TB, name string) []guardCase {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []guardCase
	var cur *guardCase
	var body []string
	file := "" // the file the body's lines go to, "" for the command
	endBody := func() {
		text := strings.Join(body, "\n")
		if file == "" {
			cur.command = strings.TrimRight(text, "\n")
		} else {
			cur.files[file] = text + "\n"
		}
		body = nil
	}
	flush := func() {
		if cur != nil {
			endBody()
			cases = append(cases, *cur)
		}
		file = ""
	}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if head, ok := strings.CutPrefix(line, "== "); ok {
			flush()
			verdict, why, _ := strings.Cut(head, ":")
			c := &guardCase{line: n, why: strings.TrimSpace(why), branch: "main"}
			word, branch, hasBranch := strings.Cut(verdict, " @")
			if hasBranch {
				c.branch = branch
			}
			switch word {
			case "deny":
				c.want = Deny
			case "ask":
				c.want = Ask
			case "allow":
				c.want = Allow
			default:
				t.Fatalf("corpus line %d: unknown verdict %q", n, word)
			}
			cur = c
			continue
		}
		if cur == nil || strings.HasPrefix(line, "##") {
			continue
		}
		if name, ok := strings.CutPrefix(line, "--- "); ok {
			// A script file on disk: relative names are in /work/repo.
			endBody()
			if cur.files == nil {
				cur.files = map[string]string{}
			}
			file = name
			if !filepath.IsAbs(file) {
				file = filepath.Join("/work/repo", file)
			}
			continue
		}
		body = append(body, line)
	}
	flush()
	return cases
}

// testPolicy is the policy the corpus assumes: wiggum's layout in
// /work/repo, on branch.
func testPolicy(branch string) Policy {
	return Policy{
		Cwd: "/work/repo", Root: "/work/repo", Home: "/home/agent", Branch: branch,
		ProtectedBranches: ProtectedBranches(""),
		StatePaths:        []string{".ralph/.agent-lock", ".ralph/.agent-lock.json", ".ralph/wiggum/"},
		HookFiles:         []string{".git/hooks/post-commit", ".git/hooks/pre-push"},
		RefNamespace:      "refs/wiggum/",
		BranchExists:      func(name string) bool { return slices.Contains([]string{"main", "master", "feature", "story"}, name) },
		Supervisor:        4242,
		SupervisorArgs:    []string{"wiggum", "run", "--agent", "claude"},
	}
}

func TestCorpus(t *testing.T) {
	cases := readCorpus(t, "testdata/corpus.txt")
	if len(cases) < 150 {
		t.Fatalf("corpus has %d cases, want at least 150", len(cases))
	}
	count := map[Action]int{}
	for _, c := range cases {
		count[c.want]++
		d := Check(c.command, c.policy())
		if d.Action != c.want {
			t.Errorf("line %d: %q: got %s (%s), want %s because %s", c.line, c.command, d.Action, d.Reason, c.want, c.why)
			continue
		}
		if d.Action != Allow && d.Reason == "" {
			t.Errorf("line %d: %q: %s without a reason", c.line, c.command, d.Action)
		}
	}
	for _, a := range []Action{Allow, Ask, Deny} {
		if count[a] == 0 {
			t.Errorf("corpus has no %s case", a)
		}
	}
}

// TestDataIsNotDenied: commands that only mention dangerous words (echo,
// grep, commit messages, here-documents written to files, interpreters
// that print) are never denied: the guard's false denials of plain data.
func TestDataIsNotDenied(t *testing.T) {
	cases := readCorpus(t, "testdata/data.txt")
	if len(cases) < 100 {
		t.Fatalf("data corpus has %d cases, want at least 100", len(cases))
	}
	for _, c := range cases {
		if c.want != Allow {
			t.Fatalf("line %d: the data corpus holds only allow cases", c.line)
		}
		if d := Check(c.command, c.policy()); d.Action != Allow {
			t.Errorf("line %d: %q: false %s (%s)", c.line, c.command, d.Action, d.Reason)
		}
	}
}

func TestReasonsAreActionable(t *testing.T) {
	p := Policy{Cwd: "/r", Root: "/r"}
	d := Check("git reset --hard", p)
	if !strings.Contains(d.Reason, "wiggum rollback") {
		t.Errorf("reset --hard reason should point at wiggum rollback: %q", d.Reason)
	}
	d = Check("git push", p)
	if !strings.Contains(d.Reason, "commit locally") {
		t.Errorf("push reason should say what to do instead: %q", d.Reason)
	}
}

func TestHugeCommandAsks(t *testing.T) {
	d := Check(strings.Repeat("echo hi; ", MaxCommand/8), testPolicy("main"))
	if d.Action != Ask {
		t.Fatalf("got %v", d)
	}
}

func TestDeepNestingAsks(t *testing.T) {
	cmd := "git push"
	for range maxDepth + 2 {
		cmd = "eval " + shellQuote(cmd)
	}
	if d := Check(cmd, testPolicy("main")); d.Action == Allow {
		t.Fatalf("deeply nested push allowed: %v", d)
	}
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FuzzCheck: the guard never panics, and a verdict other than allow always
// carries a reason. Seeds live in testdata/fuzz/FuzzCheck.
func FuzzCheck(f *testing.F) {
	f.Add("cd src && git push")
	p := testPolicy("main")
	f.Fuzz(func(t *testing.T, cmd string) {
		d := Check(cmd, p)
		if d.Action != Allow && d.Reason == "" {
			t.Fatalf("%q: %s without a reason", cmd, d.Action)
		}
	})
}

// The person's exceptions: a simple command whose words match a pattern
// is allowed, wherever it sits in the script and whatever wraps it; the
// rest of the script is judged as before.
func TestAllowPatterns(t *testing.T) {
	p := testPolicy("feature")
	p.Allow = []string{"git push origin feature/*", "npm publish --dry-run", "git reset --hard HEAD?1"}
	for cmd, want := range map[string]Action{
		"git push origin feature/login":                           Allow,
		"cd src && git push origin feature/a/b":                   Allow,
		"env GIT_TRACE=0 git push origin feature/x":               Allow,
		"bash -c 'git push origin feature/x'":                     Allow,
		"npm publish --dry-run":                                   Allow,
		"git reset --hard HEAD~1":                                 Allow,
		"git push origin main":                                    Deny,
		"git push origin feature/x; git push --force origin main": Deny,
		"git push origin feature/x --force":                       Deny,
		"npm publish":                                             Deny,
		"git reset --hard HEAD~10":                                Deny,
		"git push origin feature/x:main":                          Deny,
		"git push origin 'feature/*:*'":                           Deny,
		"git push origin feature/x:refs/heads/main":               Deny,
	} {
		if d := Check(cmd, p); d.Action != want {
			t.Errorf("%q: %s (%s), want %s", cmd, d.Action, d.Reason, want)
		}
	}
	p.Allow = nil
	if d := Check("git push origin feature/login", p); d.Action != Deny {
		t.Errorf("without exceptions: %s", d.Action)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"*", "a/c", true}, {"*", "a b", false}, {"**", "a b/c", true}, {"a*c", "abc", true}, {"a*c", "ac", true},
		{"a*c", "ab", false}, {"a?c", "abc", true}, {"a?c", "a c", false}, {"a?c", "ac", false},
		{"git push *", "git push origin", true}, {"git push *", "git push origin x", false}, {"git push **", "git push origin x", true},
		{"git push *", "git pushx", false}, {"**main", "git push origin main", true}, {"**main", "git push origin mainline", false},
		{"a***b", "a x b", true}, {"", "", true}, {"", "a", false}, {"a", "", false},
		{"feature/*", "feature/x:main", false}, {"feature/?", "feature/:", false}, {"feature/*:feature/*", "feature/x:feature/x", true},
		{"git push origin **", "git push origin feature/x:main", true},
	} {
		if got := globMatch(c.pat, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pat, c.s, got)
		}
	}
}

// The README's guard figures are the corpora's own counts: a case added
// without the figures moved fails here, not in a reader's trust.
func TestREADMEFiguresAreTheCorpus(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(file, prefix string) int {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, prefix) {
				n++
			}
		}
		return n
	}
	deny, ask, allow := count("corpus.txt", "== deny"), count("corpus.txt", "== ask"), count("corpus.txt", "== allow")
	text := strings.Join(strings.Fields(string(readme)), " ")
	want := fmt.Sprintf("holds %d cases - %d deny, %d ask, %d allow,", deny+ask+allow, deny, ask, allow)
	if !strings.Contains(text, want) {
		t.Errorf("README.md does not say %q", want)
	}
	if want := fmt.Sprintf("of %d harmless commands", count("data.txt", "== allow")); !strings.Contains(text, want) {
		t.Errorf("README.md does not say %q", want)
	}
}
