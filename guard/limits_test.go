package guard

import (
	"strings"
	"testing"
)

// Past every bound the guard asks; it never allows what it did not read.
func TestBoundsAsk(t *testing.T) {
	p := testPolicy("main")
	cases := map[string]string{
		"brackets nested past the bound":      strings.Repeat("(", maxNesting+10) + "git push" + strings.Repeat(")", maxNesting+10),
		"command substitutions nested":        strings.Repeat("$(", maxNesting+10) + "true" + strings.Repeat(")", maxNesting+10),
		"quotes nested in substitutions":      strings.Repeat(`"$(`, maxNesting) + "x" + strings.Repeat(`)"`, maxNesting),
		"brace expansion past the words":      "echo " + strings.Repeat("{a,b}", 13),
		"a brace sequence past the words":     "echo {1..1000000}",
		"a huge sequence bound":               "echo {1..99999999999}",
		"shells nested past the depth":        nestEval("git status", maxDepth+2),
		"xargs fed more words than the bound": "printf '" + strings.Repeat("a ", maxWords+1) + "' | xargs echo",
	}
	for name, cmd := range cases {
		if d := Check(cmd, p); d.Action != Ask {
			t.Errorf("%s: got %s (%s), want ask", name, d.Action, d.Reason)
		}
	}
}

// Just inside the bounds the guard still reads the command.
func TestWithinBoundsIsRead(t *testing.T) {
	p := testPolicy("main")
	deep := strings.Repeat("( ", maxNesting-2) + "git push" + strings.Repeat(" )", maxNesting-2)
	if d := Check(deep, p); d.Action != Deny {
		t.Errorf("push nested %d deep: %s (%s)", maxNesting-2, d.Action, d.Reason)
	}
	if d := Check("rm -rf {"+strings.Repeat("x,", 500)+".git}", p); d.Action != Deny {
		t.Errorf(".git among 500 brace words: %s (%s)", d.Action, d.Reason)
	}
}

func nestEval(cmd string, n int) string {
	for range n {
		cmd = "eval " + shellQuote(cmd)
	}
	return cmd
}

// nesting skips what the shell does not read as brackets.
func TestNesting(t *testing.T) {
	for src, want := range map[string]int{
		"echo hi":                            0,
		"(a)":                                1,
		"$( (b) )":                           2,
		`echo "$(a "$(b)")"`:                 4,
		"echo ')))((('":                      0,
		"echo $'\\'((('":                     0,
		"# ((((\necho":                       0,
		"cat <<EOF\n((((\nEOF\n(x)":          1,
		"cat <<-'END' | sh\n\t((((\n\tEND\n": 0,
		"a=$((1+(2)))":                       3,
		"echo \\(\\(\\(":                     0,
		"x#((":                               2,
	} {
		if got := nesting(src); got != want {
			t.Errorf("nesting(%q) = %d, want %d", src, got, want)
		}
	}
}

func TestAnsiC(t *testing.T) {
	for in, want := range map[string]string{
		`\x70ush`:    "push",
		`\160ush`:    "push",
		`\u0070ush`:  "push",
		`\U00000070`: "p",
		`\x2egit`:    ".git",
		`a\nb`:       "a\nb",
		`\'\"\\\?`:   `'"\?`,
		`\q`:         `\q`,
		`\cA`:        "\x01",
		`\x`:         `\x`,
		`tail\`:      `tail\`,
	} {
		if got := ansiC(in); got != want {
			t.Errorf("ansiC(%q) = %q, want %q", in, got, want)
		}
	}
}

// The interpreter lexer finds literals and ignores comments.
func TestLexLiterals(t *testing.T) {
	cases := []struct {
		lang, code string
		want       []string
	}{
		{"python", `print("a"); x = 'b'`, []string{"a", "b"}},
		{"python", `f"git {x}"`, []string{"git " + unknownCode}},
		{"python", `"""a "b" c"""`, []string{`a "b" c`}},
		{"python", `r"\n"`, []string{`\n`}},
		{"python", "# os.system('x')\nprint(1)", nil},
		{"perl", `qx{git push}; q(a)`, []string{"git push", "a"}},
		{"perl", `"a $x b"`, []string{"a " + unknownCode + " b"}},
		{"ruby", "%x(ls -l); `pwd`", []string{"ls -l", "pwd"}},
		{"ruby", `"a #{x} b"`, []string{"a " + unknownCode + " b"}},
		{"node", "`a ${x} b` // 'c'", []string{"a " + unknownCode + " b"}},
		{"php", `echo "a {$x}";`, []string{"a " + unknownCode}},
	}
	for _, c := range cases {
		var got []string
		for _, l := range lex(c.lang, c.code).lits {
			got = append(got, l.value)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s %q: literals %q, want %q", c.lang, c.code, got, c.want)
		}
	}
}

// CheckEdit protects the policy's state and hooks and git's data, and
// nothing else: the exclude file and a hook of the project's are the
// agent's to write, as they are to the shell's >.
func TestCheckEdit(t *testing.T) {
	p := testPolicy("main")
	for file, want := range map[string]Action{
		".ralph/wiggum/checkpoint.json":           Deny,
		"/work/repo/.ralph/.agent-lock":           Deny,
		".git/hooks/pre-push":                     Deny,
		".git/config":                             Deny,
		"/work/repo/.git/HEAD":                    Deny,
		".git/refs/heads/main":                    Deny,
		".git/index.lock":                         Deny,
		".git":                                    Deny,
		".git/info/exclude":                       Allow,
		"/work/repo/.git/info/exclude":            Allow,
		".git/hooks/pre-commit":                   Allow,
		".ralph/prd.json":                         Allow,
		"main.go":                                 Allow,
		"/tmp/other/.git/hooks/pre-push.old":      Allow,
		"/work/repo/src/../.ralph/wiggum/journal": Deny,
		// the person's own git config, read in every repository
		"/home/agent/.gitconfig":                Deny,
		"/home/agent/.config/git/ignore":        Deny,
		"/home/agent/.config/git/config":        Deny,
		"/home/agent/.config/git/other-notes":   Allow,
		"/home/agent/project/.gitconfig.sample": Allow,
	} {
		if d := CheckEdit(file, p); d.Action != want {
			t.Errorf("CheckEdit(%s) = %s (%s), want %s", file, d.Action, d.Reason, want)
		}
	}
}
