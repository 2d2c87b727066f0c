package guard

import (
	"encoding/base64"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// IsShell reports whether name (a program's base name) is a shell that runs
// code given with -c or on stdin.
func IsShell(name string) bool {
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish", "yash", "posh":
		return true
	}
	return false
}

// shell follows `bash -c CODE`, and `sh` reading a script from a pipe, a
// here-document or a here-string.
func (w *walk) shell(c *syntax.CallExpr, rest []string, hop int) {
	if len(rest) > 0 && rest[0] == "sh" { // busybox sh
		rest = rest[1:]
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-c" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'c')):
			if i+1 >= len(rest) {
				return
			}
			w.g.script(w.code(rest, i+1, hop), w.depth+1)
			return
		case a == "-o" || a == "-O" || a == "+o" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case a == "-s" || a == "--":
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
		default:
			w.scriptFile(c, rest, i, hop)
			return
		}
	}
	w.shellStdin(c)
}

// scriptFile checks the script a shell or source runs from rest[i]: stdin
// by name, a process substitution (sh <(echo git push)) whose output the
// guard can compute, a file the command writes, or a file on disk read
// through the policy.
func (w *walk) scriptFile(c *syntax.CallExpr, rest []string, i, hop int) {
	if rest[i] == "/dev/stdin" || rest[i] == "-" {
		w.shellStdin(c)
		return
	}
	if text, ok := w.writtenFile(rest[i]); ok {
		w.g.script(text, w.depth+1)
		return
	}
	if w.judgeScripts(rest[i], func(g *guard, text string) { g.script(text, w.depth+1) }) {
		return
	}
	if hop != 0 || len(rest) > len(w.argSrc) {
		return
	}
	word := w.argSrc[len(w.argSrc)-len(rest)+i]
	if len(word.Parts) != 1 {
		return
	}
	ps, ok := word.Parts[0].(*syntax.ProcSubst)
	if !ok || ps.Op == syntax.CmdOut {
		return
	}
	if code, ok := w.stmtsOutput(ps.Stmts); ok {
		w.g.script(code, w.depth+1)
		return
	}
	w.g.verdict(Ask, "this command runs the output of another command as a script (a process substitution wiggum's guard cannot compute); run the commands directly instead")
}

// stmtsOutput computes what a list of statements writes on stdout.
func (w *walk) stmtsOutput(stmts []*syntax.Stmt) (string, bool) {
	var b strings.Builder
	for _, st := range stmts {
		out, ok := w.output(st, 0)
		if !ok {
			return "", false
		}
		b.WriteString(out)
	}
	return b.String(), true
}

// shellStdin checks the code a shell reads on stdin.
func (w *walk) shellStdin(c *syntax.CallExpr) {
	st := w.stmtOf[c]
	if st == nil {
		return
	}
	if code, ok := w.scriptStdin(st); ok {
		w.g.script(code, w.depth+1)
		return
	} else if code == "" && !w.hasStdin(st) {
		return // an interactive shell: nothing to see
	}
	w.g.verdict(Ask, "this command pipes text wiggum's guard cannot see into a shell; run the commands directly instead")
}

// hasStdin reports whether st reads something other than the terminal.
func (w *walk) hasStdin(st *syntax.Stmt) bool {
	if w.pipeFrom[st] != nil {
		return true
	}
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrInOut:
			return true
		}
	}
	return false
}

// scriptStdin is stdin for a shell or interpreter reading its code there:
// a script file on disk fed to it (sh < push.sh, cat push.sh | sh) is
// read through the policy.
func (w *walk) scriptStdin(st *syntax.Stmt) (string, bool) {
	w.readStdin = true
	defer func() { w.readStdin = false }()
	return w.stdin(st)
}

// stdin computes what st reads on stdin when that is static.
func (w *walk) stdin(st *syntax.Stmt) (string, bool) {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				return "", true
			}
			return codeText(r.Hdoc), true
		case syntax.WordHdoc:
			return codeText(r.Word) + "\n", true
		case syntax.RdrIn:
			// sh < <(echo ...) reads a process substitution.
			if len(r.Word.Parts) == 1 {
				if ps, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok && ps.Op != syntax.CmdOut {
					return w.stmtsOutput(ps.Stmts)
				}
			}
			if name, lit := wordValue(r.Word); lit && w.readStdin {
				return w.fileText(name) // sh < push.sh
			}
			return "", false
		}
	}
	if from := w.pipeFrom[st]; from != nil {
		return w.output(from, 0)
	}
	return "", false
}

// output computes what st writes on stdout when it is a static producer
// (echo, printf, cat of a here-document) or a decoder (base64 -d) over one.
func (w *walk) output(st *syntax.Stmt, depth int) (string, bool) {
	if depth > 16 {
		return "", false
	}
	switch cmd := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		if cmd.Op != syntax.Pipe && cmd.Op != syntax.PipeAll {
			return "", false
		}
		in, ok := w.output(cmd.X, depth+1)
		if !ok {
			return "", false
		}
		return w.filter(cmd.Y, in, true)
	case *syntax.CallExpr:
		in, ok := w.stdin(st)
		return w.filter(st, in, ok)
	}
	return "", false
}

// filter runs a known producer or filter over input.
func (w *walk) filter(st *syntax.Stmt, in string, inOK bool) (string, bool) {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) == 0 {
		return "", false
	}
	args, _, lit, ok := w.g.expandArgs(c.Args)
	if !ok || !lit || len(args) == 0 {
		return "", false
	}
	switch path.Base(args[0]) {
	case "echo":
		return echoOutput(args[1:]), true
	case "printf":
		return printfOutput(args[1:])
	case "cat":
		if len(args) == 1 && inOK {
			return in, true
		}
		if len(args) > 1 && w.readStdin && !slices.ContainsFunc(args[1:], func(a string) bool { return strings.HasPrefix(a, "-") }) {
			var b strings.Builder
			for _, name := range args[1:] { // cat push.sh | sh
				text, ok := w.fileText(name)
				if !ok {
					return "", false
				}
				b.WriteString(text)
			}
			return b.String(), true
		}
	case "base64":
		if inOK {
			return base64Output(args[1:], in)
		}
	}
	return "", false
}

func echoOutput(rest []string) string {
	nl := "\n"
	for len(rest) > 0 && (rest[0] == "-n" || rest[0] == "-e" || rest[0] == "-E") {
		if rest[0] == "-n" {
			nl = ""
		}
		rest = rest[1:]
	}
	return strings.Join(rest, " ") + nl
}

// printfOutput handles a format without directives, or with one %s.
func printfOutput(args []string) (string, bool) {
	if len(args) < 1 {
		return "", false
	}
	format := strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t").Replace(args[0])
	if len(args) == 1 && !strings.Contains(format, "%") {
		return format, true
	}
	if strings.Count(format, "%") == 1 && strings.Contains(format, "%s") {
		var b strings.Builder
		for _, a := range args[1:] {
			b.WriteString(strings.Replace(format, "%s", a, 1))
		}
		return b.String(), true
	}
	return "", false
}

func base64Output(opts []string, in string) (string, bool) {
	decode := false
	for _, a := range opts {
		if a == "-d" || a == "--decode" || a == "-D" || a == "-di" || a == "-id" {
			decode = true
		}
	}
	if !decode {
		return "", false
	}
	out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(in), ""))
	if err != nil {
		return "", false
	}
	return string(out), true
}
