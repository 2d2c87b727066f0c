package loop

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// switchedOff is a test file whose changes switch tests off without
// deleting the file (deletedTest finds those): a skip added (t.Skip,
// @pytest.mark.skip, it.skip, @Disabled, #[ignore]), a focus that stops the
// file's other tests (it.only), test definitions taken out, or - the tests
// kept, their bodies emptied - assertions taken out and none written.
type switchedOff struct {
	Path      string
	Skips     []string // the markers added, as written ("t.Skip")
	Fewer     int      // test definitions removed, less those added
	Unchecked int      // assertions removed, with none added and no test fewer
}

func (s switchedOff) String() string {
	var what []string
	for _, m := range s.Skips {
		if strings.HasSuffix(m, ".only") || m == "fit" || m == "fdescribe" {
			what = append(what, m+" added: the file's other tests stop running")
			continue
		}
		what = append(what, m+" added")
	}
	if s.Fewer == 1 {
		what = append(what, "1 test fewer")
	} else if s.Fewer > 1 {
		what = append(what, fmt.Sprintf("%d tests fewer", s.Fewer))
	}
	if s.Unchecked == 1 {
		what = append(what, "1 assertion taken out")
	} else if s.Unchecked > 1 {
		what = append(what, fmt.Sprintf("%d assertions taken out", s.Unchecked))
	}
	return s.Path + " (" + strings.Join(what, "; ") + ")"
}

func describeSwitchedOff(s []switchedOff) (paths []string, what string) {
	var parts []string
	for _, f := range s {
		paths = append(paths, f.Path)
		parts = append(parts, f.String())
	}
	return paths, strings.Join(parts, ", ")
}

// testMarks is how one language's tests are switched off (skip: a line
// holding one), defined (def: a line beginning with one) and check what
// they test (check: a line holding one, checkLead: beginning with one), as
// written in the source after leading space.
type testMarks struct {
	skip, lead       []string // skip: anywhere in the line; lead: at its start
	def              []string
	check, checkLead []string
}

var (
	goMarks = testMarks{skip: []string{"t.Skip(", "t.Skipf(", "t.SkipNow(", "b.Skip(", "b.Skipf(", "b.SkipNow("},
		def:   []string{"func Test", "func Fuzz"},
		check: []string{"t.Error", "t.Fatal", "t.Fail(", "assert.", "require."}}
	pyMarks = testMarks{skip: []string{"@pytest.mark.skip", "@unittest.skip", "pytest.skip(", ".skipTest(", "@pytest.mark.xfail", "@unittest.expectedFailure"},
		def:   []string{"def test", "async def test"},
		check: []string{"self.assert", "pytest.raises("}, checkLead: []string{"assert ", "assert("}}
	jsMarks = testMarks{skip: []string{"it.skip(", "test.skip(", "describe.skip(", "it.only(", "test.only(", "describe.only(", "test.fixme("},
		lead: []string{"xit(", "xtest(", "xdescribe(", "fit(", "fdescribe("},
		// A test switched off or focused is defined still.
		def:   []string{"it(", "test(", "it.each", "test.each", "it.skip(", "test.skip(", "it.only(", "test.only(", "xit(", "xtest(", "fit(", "test.fixme("},
		check: []string{"expect(", "assert(", "assert."}}
	jvmMarks  = testMarks{skip: []string{"@Disabled", "@Ignore"}, def: []string{"@Test"}, check: []string{"assert", "verify("}}
	rubyMarks = testMarks{lead: []string{"skip", "pending", "xit", "xdescribe"},
		def:   []string{"it \"", "it '", "it(", "xit ", "xit(", "def test_"},
		check: []string{"expect(", "expect {", "assert", ".should"}}
	rustMarks = testMarks{skip: []string{"#[ignore"}, def: []string{"#[test]"}, check: []string{"assert"}}
)

// marksFor is the marks of a test file's language, by its extension; nil
// for a file no test runner's marks are known of (a snapshot, test data).
func marksFor(p string) *testMarks {
	switch path.Ext(p) {
	case ".go":
		return &goMarks
	case ".py":
		return &pyMarks
	case ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		return &jsMarks
	case ".java", ".kt":
		return &jvmMarks
	case ".rb":
		return &rubyMarks
	case ".rs":
		return &rustMarks
	}
	return nil
}

// marker returns the skip marker line holds, as it is to be said, or "".
func (m *testMarks) marker(line string) string {
	t := strings.TrimSpace(line)
	if comment(t) {
		return ""
	}
	for _, s := range m.skip {
		if strings.Contains(t, s) {
			return strings.TrimRight(s, "(")
		}
	}
	for _, s := range m.lead {
		rest, ok := strings.CutPrefix(t, s)
		if !ok {
			continue
		}
		// A call of its own - skip "why", skip(), xit 'x' - not
		// skipped = 1 or skip = false.
		word := strings.HasSuffix(s, "(") || rest == "" || rest[0] == '(' ||
			rest[0] == ' ' && !strings.HasPrefix(strings.TrimSpace(rest), "=")
		if !word {
			continue
		}
		return strings.TrimRight(s, "(")
	}
	return ""
}

// comment reports whether t, a trimmed line, is a comment (//, /*, a
// block comment's *, #, but not Rust's #[attribute]).
func comment(t string) bool {
	return strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*") ||
		strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "#[")
}

// checks reports whether line, not a comment, asserts something. An
// import naming an assertion library (Java's static import of
// assertEquals, Rust's use of an assert macro) asserts nothing.
func (m *testMarks) checks(line string) bool {
	t := strings.TrimSpace(line)
	if comment(t) {
		return false
	}
	for _, imp := range []string{"import ", "use ", "from ", "require ", "#include"} {
		if strings.HasPrefix(t, imp) {
			return false
		}
	}
	for _, c := range m.check {
		if strings.Contains(t, c) {
			return true
		}
	}
	for _, c := range m.checkLead {
		if strings.HasPrefix(t, c) {
			return true
		}
	}
	return false
}

func (m *testMarks) defines(line string) bool {
	t := strings.TrimSpace(line)
	for _, d := range m.def {
		if strings.HasPrefix(t, d) {
			return true
		}
	}
	return false
}

// testsSwitchedOff reads a unified diff (git diff -U0) and lists its test
// files (isTestFile, in a language marksFor knows) whose changes add a
// skip, take test definitions out, or take assertions out without writing
// any (a changed assertion is one removed and one added: nothing to say). A marker or definition both removed
// and added in a file (a line moved, reindented) counts for nothing, and
// so does a skip a hunk adds with as many new tests (a new test, skipped
// from the start, switches nothing off); a deleted file (deletedTest's)
// and a new one are not looked at.
func testsSwitchedOff(diff string) []switchedOff {
	var out []switchedOff
	var cur *testMarks
	var file string
	skips, hunk := map[string]int{}, map[string]int{}
	var order []string
	fewer, newDefs := 0, 0
	checksGone, checksNew := 0, 0
	endHunk := func() {
		for _, m := range order {
			if n := min(max(hunk[m], 0), max(newDefs, 0)); n > 0 {
				hunk[m] -= n
				newDefs -= n
			}
			skips[m] += hunk[m]
		}
		clear(hunk)
		newDefs = 0
	}
	flush := func() {
		endHunk()
		if cur != nil {
			s := switchedOff{Path: file, Fewer: max(fewer, 0)}
			if checksNew == 0 && fewer <= 0 {
				s.Unchecked = checksGone
			}
			for _, m := range order {
				if skips[m] > 0 {
					s.Skips = append(s.Skips, m)
				}
			}
			if len(s.Skips) > 0 || s.Fewer > 0 || s.Unchecked > 0 {
				out = append(out, s)
			}
		}
		cur, file, fewer, order, checksGone, checksNew = nil, "", 0, nil, 0, 0
		clear(skips)
	}
	inHunk, created := false, false // created: a new file, none of whose tests were on
	for _, line := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			flush()
			inHunk, created = false, false
		case !inHunk && line == "--- /dev/null":
			created = true
		case !inHunk && strings.HasPrefix(line, "+++ ") && !created:
			// git ends a name holding a space with a tab, and quotes
			// one holding a tab, a quote or a newline.
			p := strings.TrimSuffix(strings.TrimPrefix(line, "+++ "), "\t")
			if strings.HasPrefix(p, `"`) {
				if u, err := strconv.Unquote(p); err == nil {
					p = u
				}
			}
			p, ok := strings.CutPrefix(p, "b/")
			if ok && isTestFile(p) {
				file, cur = p, marksFor(p)
			}
		case strings.HasPrefix(line, "@@"):
			endHunk()
			inHunk = true
		case inHunk && cur != nil && (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")):
			n := 1
			if line[0] == '-' {
				n = -1
			}
			body := line[1:]
			if m := cur.marker(body); m != "" {
				if !slices.Contains(order, m) {
					order = append(order, m)
				}
				hunk[m] += n
			}
			if cur.defines(body) {
				newDefs += n
				fewer -= n
			}
			if cur.checks(body) {
				if n > 0 {
					checksNew++
				} else {
					checksGone++
				}
			}
		}
	}
	flush()
	return out
}

// switchedOffSince lists the test files whose changes from base to to (a
// commit; "" for the working tree) switch tests off. It reads the diff of
// the modified test files in a language marksFor knows - paths, or, when
// paths is nil, those a git diff --name-only finds (one process more) - so
// that a story's other changes, a regenerated snapshot, are never read.
func switchedOffSince(ctx context.Context, repo *git.Repo, base, to string, paths []string) ([]switchedOff, error) {
	tail := []string{base}
	if to != "" {
		tail = append(tail, to)
	}
	if paths == nil {
		out, err := repo.Run(ctx, append([]string{"diff", "--name-only", "-z", "--no-renames", "--diff-filter=M"}, tail...)...)
		if err != nil {
			return nil, err
		}
		paths = git.SplitZ(out)
	}
	args := append([]string{"-c", "core.quotePath=false", "diff", "-U0", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv"}, tail...)
	args = append(args, "--")
	n := len(args)
	for _, p := range paths {
		if isTestFile(p) && marksFor(p) != nil {
			args = append(args, ":(top,literal)"+p)
		}
	}
	if len(args) == n {
		return nil, nil
	}
	out, err := repo.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	return testsSwitchedOff(out), nil
}
