package guard

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// A command that runs a script file by path (sh push.sh, bash -x push.sh,
// source env.sh, ./push.sh, python3 push.py, node push.js, perl x.pl,
// awk -f x.awk) is judged by the file's content, read through
// Policy.ReadFile: shell is parsed like a command, interpreter code goes
// to the inline-code reader. An agent may write the script with its file
// tool in one step and run it in the next; the command alone hides what
// runs. A file that does not exist runs nothing; one that cannot be read
// in bounds (too large, a directory, a device) is asked about.

// MaxScript is the largest script file the guard reads; a larger one is
// asked about. A Policy.ReadFile need not read more than MaxScript+1 bytes.
const MaxScript = 256 << 10

// maxReads bounds the script files read in one Check.
const maxReads = 32

// scriptRead is one file read, kept so a Check reads each path once.
type scriptRead struct {
	text string
	ok   bool // text is a script to judge
	pre  bool // changed last before the session began
}

// judgeScripts reads the script file name (relative names against every
// directory the command may run in) and judges each text found with
// judge; a verdict names the script. It reports whether a file was found.
func (w *walk) judgeScripts(name string, judge func(g *guard, text string)) bool {
	reads := w.scriptReads(name)
	for _, r := range reads {
		sub := &guard{p: w.g.p, best: Decision{Action: Allow}, left: w.g.left, files: w.g.files, outer: w.g.outer, lenient: r.pre}
		judge(sub, r.text)
		w.g.left, w.g.files = sub.left, sub.files
		if sub.best.Action != Allow {
			// What is left in a lenient script's verdict is firm: its
			// denials, and asks from scripts the agent may have written.
			w.g.firm(sub.best.Action, "the script %s: %s", printable(name), sub.best.Reason)
		}
	}
	return len(reads) > 0
}

// fileText is the text of a script file fed to a shell on stdin: every
// candidate found, one after the other; false when none is.
func (w *walk) fileText(name string) (string, bool) {
	var texts []string
	for _, r := range w.scriptReads(name) {
		texts = append(texts, r.text)
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}

// scriptReads reads the script file name and returns the texts to judge.
func (w *walk) scriptReads(name string) []scriptRead {
	if w.g.p.ReadFile == nil || name == "" || strings.Contains(name, dynamic) {
		return nil
	}
	var reads []scriptRead
	seen := map[string]bool{}
	for _, d := range append(slices.Clip(w.dirs), w.g.outer...) {
		p := w.g.resolve(d, name)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if r := w.g.readScript(p); r.ok {
			reads = append(reads, r)
		}
	}
	return reads
}

// readScript reads the file at p through the policy, asking when it exists
// but cannot be read in bounds.
func (g *guard) readScript(p string) scriptRead {
	if r, ok := g.files[p]; ok {
		return r
	}
	r := g.readScriptFile(p)
	if g.files == nil {
		g.files = map[string]scriptRead{}
	}
	g.files[p] = r
	return r
}

func (g *guard) readScriptFile(p string) scriptRead {
	g.left.reads--
	if g.left.reads < 0 {
		g.firm(Ask, "the command runs more than %d script files; wiggum's guard does not read that many", maxReads)
		return scriptRead{}
	}
	b, err := g.p.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return scriptRead{} // the command fails: nothing runs
	case err != nil:
		g.firm(Ask, "this command runs %s, which wiggum's guard cannot read as a script (%v)", printable(p), err)
		return scriptRead{}
	case bytes.IndexByte(b[:min(len(b), 1024)], 0) >= 0:
		return scriptRead{} // a compiled program, not a script, whatever its size
	case len(b) > MaxScript && g.p.Preexisting != nil && g.p.Preexisting(p):
		return scriptRead{} // the project's own (a ./configure): not the agent's doing
	case len(b) > MaxScript:
		g.firm(Ask, "this command runs %s, a script over %d bytes; wiggum's guard does not read that much, so it cannot tell what it does", printable(p), MaxScript)
		return scriptRead{}
	}
	return scriptRead{text: string(b), ok: true, pre: g.p.Preexisting != nil && g.p.Preexisting(p)}
}

// runFile judges a file the command executes directly (./push.sh,
// scripts/x.py): by its #! line, or as shell when it has none (the shell
// runs a file the kernel cannot execute).
func (w *walk) runFile(name string) {
	w.judgeScripts(name, func(g *guard, text string) {
		prog := interpreterOf(text)
		switch {
		case IsShell(prog):
			g.script(text, w.depth+1)
		case language(prog) != "":
			g.interpCode(interpLang(language(prog)), dropShebang(text), w.depth+1)
		}
	})
}

// interpreterOf returns the base name of the program a script's #! line
// names ("env" looked through), "sh" when there is no #! line, "" when it
// cannot tell.
func interpreterOf(text string) string {
	if !strings.HasPrefix(text, "#!") {
		return "sh"
	}
	line, _, _ := strings.Cut(text[2:], "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	prog := path.Base(f[0])
	if prog != "env" {
		return prog
	}
	for i := 1; i < len(f); i++ {
		a := f[i]
		switch {
		case a == "-S" || a == "--split-string":
		case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
			i++
		case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
		default:
			return path.Base(a)
		}
	}
	return ""
}

// dropShebang blanks a #! line, which only shell reads as a comment.
func dropShebang(text string) string {
	if !strings.HasPrefix(text, "#!") {
		return text
	}
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		return text[i:]
	}
	return ""
}

// scriptOperand returns the index in rest of the script file an
// interpreter runs, or -1 when it runs inline code, a module or stdin.
func scriptOperand(lang string, rest []string) int {
	if lang == "awk" {
		for i, a := range rest {
			if (a == "-f" || a == "--file") && i+1 < len(rest) {
				return i + 1
			}
		}
		return -1
	}
	i := 0
	if (lang == "deno" || lang == "bun") && len(rest) > 0 && rest[0] == "run" {
		i = 1
	}
	for ; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-":
			return -1
		case a == "--":
			if i+1 < len(rest) {
				return i + 1
			}
			return -1
		case !strings.HasPrefix(a, "-") || len(a) < 2:
			return i
		case lang == "python" && (a == "-m" || strings.HasSuffix(a, "m") && !strings.HasPrefix(a, "--")):
			return -1
		}
		if lang == "deno" {
			continue // deno's options take their values with =
		}
		_, takesNext, isCode := codeOption(lang, a)
		if isCode {
			return -1
		}
		if takesNext {
			i++
		}
	}
	return -1
}
