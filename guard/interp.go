package guard

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Inline interpreter code (python3 -c, perl -e, ruby -e, node -e, php -r,
// deno eval, bun -e, or code on their stdin) is read for the calls that
// run commands (os.system, subprocess.run, system, execSync, backticks,
// ...): a command given there as a literal is judged like shell, a command
// only known at run time is asked about, and text that is merely printed
// stays allowed.

// language names the language an interpreter runs, "" for other programs.
func language(base string) string {
	switch base {
	case "python", "python2", "python3", "pypy", "pypy3":
		return "python"
	case "perl", "ruby", "php", "deno", "bun":
		return base
	case "node", "nodejs":
		return "node"
	case "awk", "gawk", "mawk", "nawk":
		return "awk"
	}
	if strings.HasPrefix(base, "python3.") || strings.HasPrefix(base, "python2.") {
		return "python"
	}
	return ""
}

// interp checks an interpreter's inline code, or the code it reads on
// stdin when it is given neither code nor a script.
func (w *walk) interp(c *syntax.CallExpr, base string, rest []string, hop int) {
	lang := language(base)
	code, found, script := inlineCode(base, rest)
	if found {
		w.g.interpCode(interpLang(lang), code, w.depth+1)
		return
	}
	if script {
		written := false
		for _, a := range rest {
			if text, ok := w.writtenFile(a); ok {
				w.g.interpCode(interpLang(lang), text, w.depth+1)
				written = true
			}
		}
		if i := scriptOperand(lang, rest); i >= 0 && !written {
			w.judgeScripts(rest[i], func(g *guard, text string) {
				g.interpCode(interpLang(lang), dropShebang(text), w.depth+1)
			})
		}
		return
	}
	st := w.stmtOf[c]
	if st == nil || hop > 0 || !w.hasStdin(st) {
		return
	}
	if code, ok := w.scriptStdin(st); ok {
		w.g.interpCode(interpLang(lang), code, w.depth+1)
		return
	}
	if w.pipeFrom[st] != nil {
		w.g.verdict(Ask, "this command pipes text wiggum's guard cannot see into %s; run the code from a file or inline instead", base)
	}
}

// interpLang is the lexer's language: deno and bun run JavaScript.
func interpLang(lang string) string {
	if lang == "deno" || lang == "bun" {
		return "node"
	}
	return lang
}

// inlineCode finds the code an interpreter's arguments carry. found is
// false when there is none; script is set when it runs a file or module
// instead (or reads stdin only when neither is set).
func inlineCode(base string, rest []string) (code string, found, script bool) {
	lang := language(base)
	if lang == "awk" {
		return awkProgram(rest)
	}
	if lang == "deno" {
		if len(rest) > 1 && rest[0] == "eval" {
			return strings.Join(operands(rest[1:]), "\n"), true, false
		}
		return "", false, len(rest) > 0
	}
	var parts []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "-" || a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			return strings.Join(parts, "\n"), len(parts) > 0, len(parts) == 0
		}
		if lang == "python" && (a == "-m" || strings.HasSuffix(a, "m") && !strings.HasPrefix(a, "--")) {
			return "", false, true
		}
		v, takesNext, isCode := codeOption(lang, a)
		if !isCode {
			if takesNext {
				i++
			}
			continue
		}
		if takesNext {
			if i+1 >= len(rest) {
				break
			}
			i++
			v = rest[i]
		}
		parts = append(parts, v)
		if lang == "python" {
			break // -c ends python's options
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0, false
}

// awkProgram finds awk's program: the first operand, unless -f names a
// program file.
func awkProgram(rest []string) (code string, found, script bool) {
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-f" || strings.HasPrefix(a, "--file"):
			return "", false, true
		case a == "-F" || a == "-v" || a == "--assign" || a == "--field-separator":
			i++
		case a == "--":
			if i+1 < len(rest) {
				return rest[i+1], true, false
			}
			return "", false, false
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			return a, true, false
		}
	}
	return "", false, false
}

// codeOption reads one option of an interpreter: whether it carries code
// (attached as value, or in the next argument when takesNext), or else
// whether it takes the next argument as some other value.
func codeOption(lang, a string) (value string, takesNext, isCode bool) {
	if strings.HasPrefix(a, "--") {
		name, v, has := strings.Cut(a, "=")
		switch name {
		case "--eval", "--print":
			return v, !has, lang == "node" || lang == "bun"
		case "--require", "--import", "--loader", "--input-type", "--module", "--conditions":
			return "", !has, false
		}
		return "", false, false
	}
	codeLetters, valueLetters := "", ""
	switch lang {
	case "python":
		codeLetters, valueLetters = "c", "WXQ"
	case "perl":
		codeLetters, valueLetters = "eE", "iIMmxdDC"
	case "ruby":
		codeLetters, valueLetters = "e", "rIECxiFKTW"
	case "node", "bun":
		codeLetters, valueLetters = "ep", "r"
	case "php":
		codeLetters, valueLetters = "rBRE", "cdfzt"
	}
	for j := 1; j < len(a); j++ {
		if strings.IndexByte(codeLetters, a[j]) >= 0 {
			return a[j+1:], j == len(a)-1, true
		}
		if strings.IndexByte(valueLetters, a[j]) >= 0 {
			return "", j == len(a)-1 && !(lang == "perl" && a[j] == 'i'), false
		}
	}
	return "", false, false
}

// interpCode checks interpreter code for the commands it runs.
func (g *guard) interpCode(lang, code string, depth int) {
	if depth > maxDepth {
		g.verdict(Ask, "the command nests code more than %d deep; wiggum's guard cannot follow it", maxDepth)
		return
	}
	g.left.parsed -= len(code)
	if g.left.parsed < 0 {
		g.verdict(Ask, "the command holds more than %d bytes of nested code; wiggum's guard does not analyse that much", maxParsed)
		return
	}
	l := lex(lang, code)
	for _, lit := range l.lits {
		if lit.command {
			g.script(lit.value, depth+1)
		}
	}
	l.calls(func(name string, kind callKind, from, to int) {
		g.interpCall(l, name, kind, from, to, depth)
	})
	if lang == "awk" {
		g.awkPipes(l, depth)
	}
}

// awkPipes checks awk's command pipes: "cmd" | getline runs cmd, and
// print ... | "sh" feeds a shell what the program prints.
func (g *guard) awkPipes(l *lexed, depth int) {
	for i, lit := range l.lits {
		after := strings.TrimLeft(string(l.masked[lit.end:]), " \t")
		if rest, ok := strings.CutPrefix(after, "|"); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "getline") {
			g.script(lit.value, depth+1)
		}
		before := strings.TrimRight(string(l.masked[:lit.start]), " \t")
		if strings.HasSuffix(before, "|") && IsShell(path.Base(strings.Fields(lit.value + " x")[0])) {
			for _, prev := range l.lits[:i] {
				g.probe(prev.value, depth+1)
			}
			g.verdict(Ask, "this awk program prints into a shell (| %q); wiggum's guard cannot tell what runs there", lit.value)
		}
	}
}

// callKind is what a call does with its arguments.
type callKind int

const (
	runsCommand callKind = iota // os.system, execSync, system: a literal is a command
	mayRun                      // perl's open: runs a command only in some forms
	evalsCode                   // exec, eval: a literal is more code of the language
	removesFile                 // shutil.rmtree, fs.rmSync, unlink: a literal is a path it deletes
	writesFile                  // open(..., "w"), writeFileSync: a literal is a path it overwrites
)

// runner tells, per language, whether a function runs commands or code.
// need is a word the code must hold for a generic name to count (a bare
// run( is subprocess.run only where subprocess is imported).
func runner(lang, name, code string) (callKind, bool) {
	has := func(word string) bool { return strings.Contains(code, word) }
	switch lang {
	case "python":
		switch name {
		case "system", "popen", "Popen", "check_output", "check_call", "getoutput", "getstatusoutput", "startfile",
			"execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe",
			"spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp":
			return runsCommand, true
		case "run", "call", "spawn":
			return runsCommand, has("subprocess") || has("pty")
		case "exec", "eval", "compile":
			return evalsCode, true
		}
	case "perl":
		switch name {
		case "system", "exec", "readpipe":
			return runsCommand, true
		case "open":
			return mayRun, true
		case "eval":
			return evalsCode, true
		}
	case "ruby":
		switch name {
		case "system", "exec", "spawn", "popen", "popen2", "popen2e", "popen3", "capture2", "capture2e", "capture3", "pipeline", "pipeline_r", "pipeline_w", "pipeline_rw", "pipeline_start":
			return runsCommand, true
		case "eval", "instance_eval", "class_eval", "module_eval":
			return evalsCode, true
		}
	case "node":
		switch name {
		case "exec", "execSync", "execFile", "execFileSync", "spawn", "spawnSync":
			return runsCommand, has("child_process") || has("Bun.")
		case "Command", "run":
			return runsCommand, has("Deno.")
		case "eval", "Function":
			return evalsCode, true
		}
	case "awk":
		if name == "system" {
			return runsCommand, true
		}
	case "php":
		switch name {
		case "exec", "shell_exec", "system", "passthru", "popen", "proc_open", "pcntl_exec":
			return runsCommand, true
		case "eval":
			return evalsCode, true
		}
	}
	return fileCall(lang, name, has)
}

// fileCall tells, per language, whether a function deletes or overwrites
// the file it is given (its first argument, or the path its receiver was
// made from: Path(".ralph").unlink()).
func fileCall(lang, name string, has func(string) bool) (callKind, bool) {
	switch lang {
	case "python":
		switch name {
		case "rmtree", "remove", "unlink", "rmdir", "removedirs":
			return removesFile, true
		case "open", "write_text", "write_bytes":
			return writesFile, true
		}
	case "node":
		switch name {
		case "rmSync", "rmdirSync", "unlinkSync", "removeSync", "emptyDirSync":
			return removesFile, true
		case "rm", "rmdir", "unlink", "remove", "emptyDir":
			return removesFile, has("fs")
		case "writeFileSync", "truncateSync", "writeFile", "truncate":
			return writesFile, has("fs")
		}
	case "perl":
		switch name {
		case "unlink", "rmtree", "remove_tree", "rmdir":
			return removesFile, true
		}
	case "ruby":
		switch name {
		case "rm_rf", "rm_r", "rm", "rm_f", "remove_dir", "remove_entry", "remove_entry_secure", "rmtree", "delete", "unlink", "rmdir":
			return removesFile, true
		case "write":
			return writesFile, true
		}
	case "php":
		switch name {
		case "unlink", "rmdir":
			return removesFile, true
		case "file_put_contents":
			return writesFile, true
		}
	}
	return 0, false
}

// calls finds the calls of runners in the code: name, then "(" (or, in
// perl and ruby, a literal without parentheses); from and to delimit the
// arguments in the masked code.
func (l *lexed) calls(each func(name string, kind callKind, from, to int)) {
	m := l.masked
	for i := 0; i < len(m); i++ {
		if !isIdentByte(m[i]) || (i > 0 && isIdentByte(m[i-1])) {
			continue
		}
		j := i
		for j < len(m) && isIdentByte(m[j]) {
			j++
		}
		name := string(m[i:j])
		kind, ok := runner(l.lang, name, l.code)
		if j == len(m) || !ok {
			i = j - 1
			continue
		}
		k := j
		for k < len(m) && (l.code[k] == ' ' || l.code[k] == '\t') {
			k++
		}
		switch {
		case k < len(m) && m[k] == '(':
			each(name, kind, k+1, matching(m, k))
		case (l.lang == "perl" || l.lang == "ruby") && k > j && (l.litAt(k) >= 0 || kind == mayRun):
			// A literal without parentheses; perl's open, a handle first
			// (open F, ">path").
			end := k
			for end < len(m) && m[end] != '\n' && m[end] != ';' {
				end++
			}
			each(name, kind, k, end)
		}
		i = j - 1
	}
	if l.lang == "node" {
		l.shellTemplates(each)
	}
}

// shellTemplates finds zx's and Bun's $`cmd`, which run a template as a
// shell command.
func (l *lexed) shellTemplates(each func(name string, kind callKind, from, to int)) {
	for _, lit := range l.lits {
		if lit.start > 0 && l.code[lit.start-1] == '$' && l.code[lit.start] == '`' {
			each("$", runsCommand, lit.start, lit.end)
		}
	}
}

// matching returns the index of the bracket closing the one at open.
func matching(m []byte, open int) int {
	depth := 0
	for i := open; i < len(m); i++ {
		switch m[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(m)
}

// litAt returns the index of the literal starting at offset, or -1.
func (l *lexed) litAt(offset int) int {
	for i, lit := range l.lits {
		if lit.start == offset {
			return i
		}
	}
	return -1
}

// interpCall judges one call: the literal command it runs, or the code it
// evaluates. A runner whose command is not a literal is asked about unless
// a literal among its arguments is denied outright.
func (g *guard) interpCall(l *lexed, name string, kind callKind, from, to int, depth int) {
	var args []literal
	for _, lit := range l.lits {
		if lit.start >= from && lit.end <= to+1 {
			args = append(args, lit)
		}
	}
	first := from
	for first < to && first < len(l.code) && (isSpace(l.code[first]) || l.code[first] == '[' || l.code[first] == '(') {
		first++
	}
	literalFirst := len(args) > 0 && args[0].start == first
	if kind == evalsCode {
		if literalFirst {
			g.interpCode(l.lang, args[0].value, depth+1)
		}
		return
	}
	if kind == removesFile || kind == writesFile {
		g.interpFile(l, name, kind, args, from, to)
		return
	}
	if kind == mayRun && l.lang == "perl" {
		g.perlOpenWrites(l, name, args)
	}
	joined := l.join(args)
	if kind == runsCommand && literalFirst {
		main := args[0].value
		if len(args) > 1 && !strings.Contains(main, " ") {
			main = joined // an argument vector: ["git", "push"]
		}
		g.script(main, depth+1)
	}
	// Other readings of the arguments count only when they are denied:
	// execvp("git", ["git", "push"]) repeats the program name.
	for _, cand := range candidates(args, joined) {
		g.probe(cand, depth+1)
	}
	if kind == runsCommand && !literalFirst && g.best.Action < Deny {
		g.verdict(Ask, "this %s code runs a command built at run time (%s), so wiggum's guard cannot tell what it does; put the command in the shell instead", l.lang, name)
	}
}

// join reads an argument list as one command line: literals glued by a
// concatenation operator ("gi"."t push", 'git' + ' push', or python's
// adjacent literals) are one word, others are separate words.
func (l *lexed) join(args []literal) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			switch strings.TrimSpace(string(l.masked[args[i-1].end:a.start])) {
			case "", ".", "+", "..":
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteString(a.value)
	}
	return b.String()
}

// maxCandidates bounds the readings of one call's arguments.
const maxCandidates = 64

// candidates are the ways an argument list may read as a command.
func candidates(args []literal, joined string) []string {
	out := []string{joined}
	for i, a := range args {
		if len(out) >= maxCandidates {
			break
		}
		out = append(out, a.value)
		if i > 0 {
			rest := make([]string, 0, len(args)-i)
			for _, b := range args[i:] {
				rest = append(rest, b.value)
			}
			out = append(out, strings.Join(rest, " "))
		}
	}
	return out
}

// probe checks src as shell and keeps only a deny: text that might be a
// command counts when it clearly is a dangerous one.
func (g *guard) probe(src string, depth int) {
	sub := &guard{p: g.p, best: Decision{Action: Allow}, left: g.left, files: g.files, outer: g.outer}
	sub.script(src, depth)
	g.left, g.files = sub.left, sub.files
	if sub.best.Action == Deny {
		g.verdict(Deny, "%s", sub.best.Reason)
	}
}
