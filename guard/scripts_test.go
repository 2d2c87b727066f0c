package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// TestScriptReaderNilKeepsTodaysVerdict: without a reader the guard reads
// no file, so a script run by path is judged by the command alone.
func TestScriptReaderNilKeepsTodaysVerdict(t *testing.T) {
	p := testPolicy("main")
	for _, cmd := range []string{"sh push.sh", "./push.sh", "python3 push.py"} {
		if d := Check(cmd, p); d.Action != Allow {
			t.Errorf("%q with no reader: got %v, want allow", cmd, d)
		}
	}
}

// TestScriptFileBounds: a file that exists but cannot be read as a script
// in bounds is asked about; a missing file runs nothing; a compiled
// program is not judged.
func TestScriptFileBounds(t *testing.T) {
	errDir := errors.New("read /work/repo/dir: is a directory")
	cases := []struct {
		name string
		cmd  string
		text string
		err  error
		want Action
	}{
		{"missing", "sh push.sh", "", fs.ErrNotExist, Allow},
		{"missing wrapped", "bash x.sh", "", &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}, Allow},
		{"directory", "sh dir", "", errDir, Ask},
		{"fifo", "./fifo", "", errors.New("not a regular file"), Ask},
		{"too large", "sh big.sh", "echo hi\n" + strings.Repeat("#", MaxScript), nil, Ask},
		{"just fits", "sh big.sh", "git push\n" + strings.Repeat("#", MaxScript-9), nil, Deny},
		{"compiled program", "./tool", "\x7fELF\x02\x01\x01\x00git push", nil, Allow},
		{"large compiled program", "./bin/tool --help", "\x7fELF\x02\x01\x01\x00" + strings.Repeat("x", 2*MaxScript), nil, Allow},
		{"interpreter file too large", "python3 big.py", strings.Repeat("x = 1\n", MaxScript/5), nil, Ask},
	}
	for _, c := range cases {
		p := testPolicy("main")
		p.ReadFile = func(string) ([]byte, error) { return []byte(c.text), c.err }
		d := Check(c.cmd, p)
		if d.Action != c.want {
			t.Errorf("%s: %q: got %v, want %s", c.name, c.cmd, d, c.want)
		}
		if d.Action != Allow && d.Reason == "" {
			t.Errorf("%s: %s without a reason", c.name, d.Action)
		}
	}
}

// TestScriptReadsOnlyWhenRunByPath: the hook's reader is called only for a
// command that runs a script file, once per file however often it runs.
func TestScriptReadsOnlyWhenRunByPath(t *testing.T) {
	cases := []struct {
		cmd   string
		reads int
	}{
		{"git status && go build ./... && echo hi > out.txt", 0},
		{"/usr/bin/git status", 0},
		{"bash -c 'go test ./...'", 0},
		{"python3 -c 'print(1)'", 0},
		{"python3 -m pytest", 0},
		{"cat push.sh", 0},
		{"cat build.sh > copy.sh && cat build.sh | grep go", 0},
		{"cat build.sh | sh", 1},
		{"bash < build.sh", 1},
		{"echo 'go vet' > p.sh && sh p.sh", 0}, // the command's own text is judged
		{"sh build.sh", 1},
		{"sh build.sh; ./build.sh; bash build.sh", 1},
		{"cd sub && sh build.sh", 2}, // /work/repo and /work/repo/sub
	}
	for _, c := range cases {
		var got []string
		p := testPolicy("main")
		p.ReadFile = func(name string) ([]byte, error) {
			got = append(got, name)
			return []byte("go build ./...\n"), nil
		}
		if d := Check(c.cmd, p); d.Action != Allow {
			t.Errorf("%q: got %v", c.cmd, d)
		}
		if len(got) != c.reads {
			t.Errorf("%q: read %d files %q, want %d", c.cmd, len(got), got, c.reads)
		}
	}
}

// TestScriptRecursionBounded: scripts running themselves or a long chain
// of scripts end in a verdict, never allow, within the guard's bounds.
func TestScriptRecursionBounded(t *testing.T) {
	files := map[string]string{"/work/repo/self.sh": "sh self.sh\n"}
	for i := range maxReads + 8 {
		files[fmt.Sprintf("/work/repo/s%d.sh", i)] = fmt.Sprintf("echo step\nsh s%d.sh\n", i+1)
	}
	fanout := strings.Builder{}
	for i := range maxReads + 8 {
		fmt.Fprintf(&fanout, "sh f%d.sh\n", i)
		files[fmt.Sprintf("/work/repo/f%d.sh", i)] = "go build ./...\n"
	}
	files["/work/repo/fan.sh"] = fanout.String()
	p := testPolicy("main")
	p.ReadFile = mapReader(files)
	for _, cmd := range []string{"sh self.sh", "./s0.sh", "sh fan.sh"} {
		if d := Check(cmd, p); d.Action != Ask {
			t.Errorf("%q: got %v, want ask", cmd, d)
		}
	}
}

func TestInterpreterOf(t *testing.T) {
	cases := map[string]string{
		"#!/bin/sh\n":                          "sh",
		"#! /bin/bash -e\n":                    "bash",
		"#!/usr/bin/env python3\n":             "python3",
		"#!/usr/bin/env -S node --no-warnings": "node",
		"#!/usr/bin/env -u HOME perl\n":        "perl",
		"#!/usr/bin/env FOO=1 ruby\n":          "ruby",
		"#!/usr/bin/make -f\n":                 "make",
		"echo no shebang\n":                    "sh",
		"#!\n":                                 "",
	}
	for text, want := range cases {
		if got := interpreterOf(text); got != want {
			t.Errorf("%q: got %q, want %q", text, got, want)
		}
	}
}

func TestScriptOperand(t *testing.T) {
	cases := []struct {
		lang string
		args string
		want int
	}{
		{"python", "push.py", 0},
		{"python", "-u -W ignore push.py x", 3},
		{"python", "-m pytest", -1},
		{"python", "-c print(1)", -1},
		{"python", "-", -1},
		{"node", "--require ./r.js push.js", 2},
		{"node", "-e x", -1},
		{"perl", "-w x.pl", 1},
		{"perl", "-I lib x.pl", 2},
		{"ruby", "-r json x.rb", 2},
		{"deno", "run --allow-all x.ts", 2},
		{"awk", "-F : -f prog.awk in.txt", 3},
		{"awk", "{print} in.txt", -1},
	}
	for _, c := range cases {
		if got := scriptOperand(c.lang, strings.Fields(c.args)); got != c.want {
			t.Errorf("%s %s: got %d, want %d", c.lang, c.args, got, c.want)
		}
	}
}

// TestScriptReasonNamesTheScript: the agent is told which script holds
// what is denied, through every script on the way.
func TestScriptReasonNamesTheScript(t *testing.T) {
	p := testPolicy("main")
	p.ReadFile = mapReader(map[string]string{
		"/work/repo/a.sh":       "echo one\nsh tools/b.sh\n",
		"/work/repo/tools/b.sh": "git push\n",
	})
	d := Check("bash a.sh", p)
	if d.Action != Deny || !strings.HasPrefix(d.Reason, "the script a.sh: the script tools/b.sh: ") || !strings.Contains(d.Reason, "commit locally") {
		t.Fatalf("got %v", d)
	}
}

// FuzzCheckScript: whatever a script file holds, running it by path in any
// of the ways the guard reads never panics, and a verdict other than allow
// carries a reason.
func FuzzCheckScript(f *testing.F) {
	f.Add("#!/bin/sh\ngit push\n")
	f.Add("#!/usr/bin/env python3\nimport os\nos.system('git push')\n")
	f.Add("sh s.sh\n")
	f.Add("all: b\n\t$(CC) -o $@ $$(x) ${Y\nb:\n\t@git push\n")
	f.Add(`{"scripts": {"test": "git push", "prex": "rm -rf .ralph", "x": "echo"}}`)
	for _, cmd := range []string{"sh s.sh", "./s.sh", "python3 s.sh", "node s.sh", "cat s.sh | sh", "awk -f s.sh"} {
		f.Add(cmd)
	}
	f.Add(`{"workspaces": ["packages/*", "*", "a/**", {"x": 1}], "scripts": {"x": "npm run x -w a"}}`)
	f.Add("packages:\n  - 'packages/*'\n  - \"!x\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		p := testPolicy("main")
		files := map[string]string{"/work/repo/s.sh": text, "/work/repo/package.json": text, "/work/repo/pnpm-workspace.yaml": text,
			"/work/repo/packages/a/package.json": text, "/work/repo/packages/b/package.json": text}
		p.ReadFile, p.ReadDir = mapReader(files), mapDirs(files)
		for _, cmd := range []string{"sh s.sh", "./s.sh", "python3 s.sh", "node s.sh", "perl s.sh", "cat s.sh | sh", "awk -f s.sh", "make -f s.sh", "make -f s.sh all", "npm test", "yarn x",
			"npm run x -w a", "npm run x --workspaces", "pnpm -r x", "pnpm --filter ...a... x", "yarn workspace a x", "yarn workspaces foreach run x", "npm run x -w @s/b",
			"gh api graphql -f query=x", "gh -R a/b pr merge", "hub push", "mvn deploy", "docker buildx build --push .", "npx -y x", "netlify deploy --prod", "terraform apply"} {
			if d := Check(cmd, p); d.Action != Allow && d.Reason == "" {
				t.Fatalf("%q over %q: %s without a reason", cmd, text, d.Action)
			}
		}
	})
}
