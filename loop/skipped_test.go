package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testsSwitchedOff, on the diffs git itself makes: a skip added, a focus,
// tests taken out or commented out, in each language's own words; a moved
// or renamed test, a skip in a comment, a new test file and a skip taken
// out are nothing to say.
func TestTestsSwitchedOff(t *testing.T) {
	cases := []struct {
		name, path, before, after, want string
	}{
		{"go skip", "calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(1)\n\t}\n}\n",
			"package calc\n\nfunc TestAdd(t *testing.T) {\n\tt.Skip(\"flaky\")\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(1)\n\t}\n}\n",
			"calc_test.go (t.Skip added)"},
		{"go test renamed away", "calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {}\n\nfunc TestSub(t *testing.T) {}\n",
			"package calc\n\nfunc testAdd(t *testing.T) {}\n\nfunc TestSub(t *testing.T) {}\n",
			"calc_test.go (1 test fewer)"},
		{"go commented out", "pkg/calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {\n}\n",
			"package calc\n\n// func TestAdd(t *testing.T) {\n// }\n",
			"pkg/calc_test.go (1 test fewer)"},
		{"go skip in a comment", "calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {}\n",
			"package calc\n\n// t.Skip(\"x\") would hide it\nfunc TestAdd(t *testing.T) {}\n", ""},
		{"go test moved", "calc_test.go", "package calc\n\nfunc TestA(t *testing.T) {}\n\nfunc TestB(t *testing.T) {}\n",
			"package calc\n\nfunc TestB(t *testing.T) {}\n\nfunc TestA(t *testing.T) {}\n", ""},
		{"go skip taken out", "calc_test.go", "package calc\n\nfunc TestA(t *testing.T) {\n\tt.Skip()\n}\n",
			"package calc\n\nfunc TestA(t *testing.T) {\n}\n", ""},
		{"python", "tests/test_api.py", "def test_get():\n    assert get() == 1\n\ndef test_put():\n    assert put()\n\ndef test_del():\n    assert rm()\n",
			"import pytest\n\n@pytest.mark.skip(reason=\"later\")\ndef test_get():\n    assert get() == 1\n",
			"tests/test_api.py (@pytest.mark.skip added; 2 tests fewer)"},
		{"python unittest", "test_x.py", "class T(unittest.TestCase):\n    def test_a(self):\n        pass\n",
			"class T(unittest.TestCase):\n    def test_a(self):\n        self.skipTest('no')\n", "test_x.py (.skipTest added)"},
		{"jest only", "src/app.test.ts", "describe('app', () => {\n  it('renders', () => {})\n  it('routes', () => {})\n})\n",
			"describe('app', () => {\n  it.only('renders', () => {})\n  it('routes', () => {})\n})\n",
			"src/app.test.ts (it.only added: the file's other tests stop running)"},
		{"jest xit", "web/__tests__/a.js", "test('a', () => {})\ntest('b', () => {})\n",
			"test('a', () => {})\nxtest('b', () => {})\n", "web/__tests__/a.js (xtest added)"},
		{"junit", "src/test/java/CalcTest.java", "class CalcTest {\n  @Test\n  void add() {}\n}\n",
			"class CalcTest {\n  @Disabled(\"slow\")\n  @Test\n  void add() {}\n}\n", "src/test/java/CalcTest.java (@Disabled added)"},
		{"rspec", "spec/calc_spec.rb", "describe Calc do\n  it \"adds\" do\n    expect(1).to eq 1\n  end\nend\n",
			"describe Calc do\n  it \"adds\" do\n    skip \"later\"\n    skipped = 1\n    expect(1).to eq 1\n  end\nend\n", "spec/calc_spec.rb (skip added)"},
		{"rust", "tests/calc.rs", "#[test]\nfn adds() {}\n", "#[test]\n#[ignore]\nfn adds() {}\n", "tests/calc.rs (#[ignore added)"},
		{"not a test file", "src/calc.go", "package calc\n\nfunc TestMode() {}\n", "package calc\n", ""},
		{"a new test skipped", "calc_test.go", "package calc\n\nfunc TestA(t *testing.T) {}\n",
			"package calc\n\nfunc TestA(t *testing.T) {}\n\nfunc TestB(t *testing.T) {\n\tt.Skip(\"todo\")\n}\n", ""},
		{"a test moved with its skip", "calc_test.go", "package calc\n\nfunc TestA(t *testing.T) {\n\tt.Skip()\n}\n\nfunc TestB(t *testing.T) {}\n",
			"package calc\n\nfunc TestB(t *testing.T) {}\n\nfunc TestA(t *testing.T) {\n\tt.Skip()\n}\n", ""},
		{"go body emptied", "calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
			"package calc\n\nfunc TestAdd(t *testing.T) {\n}\n", "calc_test.go (1 assertion taken out)"},
		{"go assertion commented out", "calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Errorf(\"add\")\n\t}\n}\n",
			"package calc\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\t// t.Errorf(\"add\")\n\t}\n}\n", "calc_test.go (1 assertion taken out)"},
		{"go assertion changed", "calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {\n\tt.Errorf(\"a\")\n\tt.Errorf(\"b\")\n\tt.Errorf(\"c\")\n}\n",
			"package calc\n\nfunc TestAdd(t *testing.T) {\n\tfor _, c := range cases {\n\t\tt.Errorf(\"%s\", c)\n\t}\n}\n", ""},
		{"jest expect removed", "src/sum.test.js", "test('sum', () => {\n  expect(sum(1, 2)).toBe(3)\n  expect(sum(0, 0)).toBe(0)\n})\n",
			"test('sum', () => {\n  sum(1, 2)\n})\n", "src/sum.test.js (2 assertions taken out)"},
		{"pytest assert removed", "tests/test_calc.py", "def test_add():\n    assert add(1, 2) == 3\n",
			"def test_add():\n    add(1, 2)\n", "tests/test_calc.py (1 assertion taken out)"},
		{"an unused import of an assertion taken out", "src/test/java/CalcTest.java", "import static org.junit.jupiter.api.Assertions.assertEquals;\nimport static org.junit.jupiter.api.Assertions.assertTrue;\nclass CalcTest {\n  @Test\n  void add() { assertEquals(3, add(1, 2)); }\n}\n",
			"import static org.junit.jupiter.api.Assertions.assertEquals;\nclass CalcTest {\n  @Test\n  void add() { assertEquals(3, add(1, 2)); }\n}\n", ""},
		{"new test file", "new_test.go", "", "package x\n\nfunc TestA(t *testing.T) { t.Skip() }\n", ""},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newRepo(t, 1)
			dir := st.Repo.Root
			full := filepath.Join(dir, filepath.FromSlash(tc.path))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.before != "" {
				if err := os.WriteFile(full, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
				gitT(t, dir, "add", "-A")
				gitT(t, dir, "commit", "-q", "-m", "before")
			}
			base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
			if err := os.WriteFile(full, []byte(tc.after), 0o644); err != nil {
				t.Fatal(err)
			}
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "after")
			for _, only := range [][]string{nil, {tc.path}} {
				off, err := switchedOffSince(ctx, st.Repo, base, "HEAD", only)
				if err != nil {
					t.Fatal(err)
				}
				_, got := describeSwitchedOff(off)
				if got != tc.want {
					t.Errorf("paths %q: got %q, want %q", only, got, tc.want)
				}
			}
		})
	}
}

// A test file whose name git quotes (a space, a tab, non-ASCII) is read
// under its own name.
func TestTestsSwitchedOffOddNames(t *testing.T) {
	st, _ := newRepo(t, 1)
	dir := st.Repo.Root
	names := []string{"tests/test a\tb.py", "tests/test_ünï.py"}
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte("def test_a():\n    pass\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "tests")
	base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("import pytest\n\n@pytest.mark.skip\ndef test_a():\n    pass\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	off, err := switchedOffSince(context.Background(), st.Repo, base, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := describeSwitchedOff(off)
	if strings.Join(paths, "|") != strings.Join(names, "|") {
		t.Fatalf("got %q, want %q", paths, names)
	}
}

// Whatever the diff - an agent's file can hold any bytes, a name can be
// quoted oddly - reading it never panics, and what it names is a test
// file the diff changed.
func FuzzTestsSwitchedOff(f *testing.F) {
	f.Add("diff --git a/a_test.go b/a_test.go\n--- a/a_test.go\n+++ b/a_test.go\n@@ -1 +1,2 @@\n-func TestA(t *testing.T) {\n+\tt.Skip()\n")
	f.Add("diff --git a/x b/x\n+++ \"b/tests/\\303\\274.py\"\t\n@@\n+@pytest.mark.skip\n-def test_a():\n")
	f.Add("+++ b/spec/a_spec.rb\n@@\n+skip\n+  skip = 1\n-it 'x' do\n@@\n+xit 'y'\n")
	f.Fuzz(func(t *testing.T, diff string) {
		for _, s := range testsSwitchedOff(diff) {
			if !isTestFile(s.Path) || !strings.Contains(diff, "+++ ") {
				t.Fatalf("%q named from %q", s.Path, diff)
			}
			if len(s.Skips) == 0 && s.Fewer <= 0 && s.Unchecked <= 0 {
				t.Fatalf("%+v listed for nothing", s)
			}
		}
	})
}
