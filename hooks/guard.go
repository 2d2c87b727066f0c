package hooks

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Action is a guard verdict. Higher values win when a command holds several
// sub-commands.
type Action int

// Guard verdicts.
const (
	Allow Action = iota
	Ask
	Deny
)

func (a Action) String() string {
	switch a {
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "allow"
}

// Decision is the guard's answer for one shell command.
type Decision struct {
	Action Action
	Reason string
}

// GuardInput is what the guard knows about where a command runs.
type GuardInput struct {
	Command string
	Cwd     string // absolute directory the command starts in
	Root    string // top of the working tree, "" when unknown
	Home    string // the user's home directory, "" when unknown
	// Branch is the branch checked out in Root ("" when unknown or
	// detached); Protected lists the branches nothing may be merged into.
	Branch    string
	Protected []string
}

// maxDepth bounds nested shells (bash -c "eval '...'"): past it the guard
// cannot follow and asks.
const maxDepth = 8

// maxCommand is the longest command the guard parses; a longer one is asked
// about rather than analysed, so a hostile payload cannot make the hook slow.
const maxCommand = 256 << 10

// dynamic stands for text only known at run time (an expansion).
const dynamic = "\x00"

// Guard decides whether a shell command may run during a wiggum session.
func Guard(in GuardInput) Decision {
	if len(in.Command) > maxCommand {
		return Decision{Ask, fmt.Sprintf("the command is %d bytes long; wiggum's guard does not analyse commands over %d bytes", len(in.Command), maxCommand)}
	}
	g := &guard{in: in, best: Decision{Action: Allow}}
	g.script(in.Command, 0)
	return g.best
}

type guard struct {
	in   GuardInput
	best Decision
}

func (g *guard) verdict(a Action, format string, args ...any) {
	if a > g.best.Action {
		g.best = Decision{a, fmt.Sprintf(format, args...)}
	}
}

// script parses src and checks every command in it.
func (g *guard) script(src string, depth int) {
	if depth > maxDepth {
		g.verdict(Ask, "the command nests shells more than %d deep; wiggum's guard cannot follow it", maxDepth)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		g.verdict(Ask, "wiggum's guard cannot parse this command (%v), so it cannot tell whether it is safe", err)
		return
	}
	w := &walk{g: g, depth: depth, pipeFrom: map[*syntax.Stmt]*syntax.Stmt{}, stmtOf: map[*syntax.CallExpr]*syntax.Stmt{}}
	w.dirs = w.cdTargets(f)
	syntax.Walk(f, w.visit)
}

// walk checks one parsed script.
type walk struct {
	g        *guard
	depth    int
	pipeFrom map[*syntax.Stmt]*syntax.Stmt // a pipeline stage -> the stage feeding its stdin
	stmtOf   map[*syntax.CallExpr]*syntax.Stmt
	dirs     []string // directories commands may run in ("" = unknown)
	branches []string // branches the script may have checked out
}

func (w *walk) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		if c, ok := n.Cmd.(*syntax.CallExpr); ok {
			w.stmtOf[c] = n
		}
		for _, r := range n.Redirs {
			w.redirect(r)
		}
	case *syntax.BinaryCmd:
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			w.pipeFrom[n.Y] = n.X
		}
	case *syntax.CallExpr:
		w.call(n)
	case *syntax.DeclClause:
		// "alias p='git push'" makes code out of data.
		if n.Variant.Value == "alias" {
			for _, a := range n.Args {
				if a.Value != nil {
					w.g.script(codeText(a.Value), w.depth+1)
				}
			}
		}
	}
	return true
}

// cdTargets lists the directories the script's commands may run in: the
// start directory and every literal cd target; "" marks one it cannot know.
func (w *walk) cdTargets(f *syntax.File) []string {
	dirs := []string{w.g.in.Cwd}
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		if name, lit := wordValue(c.Args[0]); !lit || (name != "cd" && name != "pushd") {
			return true
		}
		target := "~"
		for _, a := range c.Args[1:] {
			s, lit := wordValue(a)
			if lit && strings.HasPrefix(s, "-") && s != "-" {
				continue
			}
			target = s
			if !lit {
				target = dynamic
			}
			break
		}
		// Commands run in order, so a relative cd starts from the last one.
		dirs = append(dirs, w.g.resolve(dirs[len(dirs)-1], target))
		return true
	})
	return dirs
}

// resolve makes p absolute against base; "" when either is unknown.
func (g *guard) resolve(base, p string) string {
	switch {
	case strings.Contains(p, dynamic) || p == "-":
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		if g.in.Home == "" {
			return ""
		}
		return filepath.Join(g.in.Home, strings.TrimPrefix(p, "~"))
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	case base == "":
		return ""
	}
	return filepath.Join(base, p)
}

// redirect denies writing into wiggum's state through > and friends.
func (w *walk) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut:
	default:
		return
	}
	if r.Word == nil {
		return
	}
	target, _ := wordValue(r.Word)
	if why := w.g.protectedState(target); why != "" {
		w.g.verdict(Deny, "this command writes to %s with a redirection; %s", target, why)
	}
}

// call checks one simple command.
func (w *walk) call(c *syntax.CallExpr) {
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		s, _ := wordValue(a)
		args = append(args, s)
	}
	w.command(c, args, 0)
}

// command checks argv after stripping wrappers such as env, timeout, nice,
// sudo and xargs.
func (w *walk) command(c *syntax.CallExpr, args []string, hop int) {
	if len(args) == 0 {
		return
	}
	if hop > 16 {
		w.g.verdict(Ask, "the command wraps itself too many times for wiggum's guard to follow")
		return
	}
	name := args[0]
	if strings.Contains(name, dynamic) {
		base := name[strings.LastIndex(name, "/")+1:]
		if base == "" || strings.Contains(base, dynamic) {
			w.g.verdict(Ask, "the program this command runs is only known at run time (%s), so wiggum's guard cannot tell what it does", printable(name))
			return
		}
		name = base
	}
	base := path.Base(name)
	rest := args[1:]
	switch base {
	case "env":
		i := 0
		for i < len(rest) {
			a := rest[i]
			switch {
			case a == "--":
				i++
				goto envDone
			case a == "-S" || a == "--split-string":
				if i+1 < len(rest) {
					w.g.script(strings.Join(rest[i+1:], " "), w.depth+1)
				}
				return
			case strings.HasPrefix(a, "--split-string="):
				w.g.script(strings.TrimPrefix(a, "--split-string="), w.depth+1)
				return
			case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
				i += 2
			case strings.HasPrefix(a, "-"):
				i++
			case strings.Contains(a, "=") && !strings.HasPrefix(a, "="):
				i++
			default:
				goto envDone
			}
		}
	envDone:
		w.command(c, rest[min(i, len(rest)):], hop+1)
		return
	case "timeout":
		i := skipOptions(rest, "sk")
		w.command(c, rest[min(i+1, len(rest)):], hop+1) // the duration
		return
	case "nice", "ionice", "nohup", "setsid", "stdbuf", "time", "chronic", "unbuffer", "sudo", "doas", "builtin", "exec", "caffeinate", "taskset", "chrt", "systemd-run", "firejail", "catchsegv", "strace", "ltrace", "command":
		if base == "command" && len(rest) > 0 && (rest[0] == "-v" || rest[0] == "-V") {
			return
		}
		i := skipOptions(rest, wrapperValueOpts[base])
		if base == "taskset" || base == "chrt" {
			i++ // the mask or priority
		}
		w.command(c, rest[min(i, len(rest)):], hop+1)
		return
	case "xargs":
		i := skipOptions(rest, "adEeIiLlnPs")
		tail := rest[min(i, len(rest)):]
		if len(tail) == 0 {
			return // xargs runs echo
		}
		// The arguments xargs appends come from stdin: unknown.
		w.command(c, append(append([]string{}, tail...), dynamic), hop+1)
		return
	case "find":
		w.find(c, rest, hop)
		return
	case "eval":
		var parts []string
		for _, a := range c.Args[len(c.Args)-len(rest):] {
			parts = append(parts, codeText(a))
		}
		if hop == 0 {
			w.g.script(strings.Join(parts, " "), w.depth+1)
		} else {
			w.g.script(strings.Join(rest, " "), w.depth+1)
		}
		return
	case "alias":
		for _, a := range rest {
			if _, code, ok := strings.Cut(a, "="); ok {
				w.g.script(code, w.depth+1)
			}
		}
		return
	case "trap":
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			w.g.script(rest[0], w.depth+1)
		}
		return
	case "watch":
		i := skipOptions(rest, "nqd")
		if i < len(rest) {
			w.g.script(strings.Join(rest[i:], " "), w.depth+1)
		}
		return
	case "su", "runuser", "script":
		for i, a := range rest {
			if (a == "-c" || a == "--command") && i+1 < len(rest) {
				w.g.script(rest[i+1], w.depth+1)
			}
		}
		return
	case "flock":
		w.flock(c, rest, hop)
		return
	case "git":
		w.git(rest)
		return
	}
	if shells[base] {
		w.shell(c, rest, hop)
		return
	}
	w.files(base, rest)
}

// wrapperValueOpts lists, per wrapper, the short options that take a value.
var wrapperValueOpts = map[string]string{
	"nice": "n", "ionice": "cnp", "stdbuf": "ioe", "time": "fo", "sudo": "ugpChrtTDR",
	"doas": "uC", "exec": "a", "taskset": "", "chrt": "", "systemd-run": "pEpu", "strace": "eoIpPsSuXbO",
	"ltrace": "eoplnsuSxXAaDF", "setsid": "", "command": "",
}

// skipOptions returns the index of the first operand in args, skipping
// options; valueOpts are the short options that consume the next argument.
func skipOptions(args []string, valueOpts string) int {
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			return i + 1
		case strings.HasPrefix(a, "--"):
			i++
			if !strings.Contains(a, "=") && longTakesValue(a) && i < len(args) {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			// -n10 carries its value; -n 10 does not. Old nice takes -10.
			last := a[len(a)-1]
			i++
			if len(a) == 2 && strings.IndexByte(valueOpts, last) >= 0 && i < len(args) {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// longTakesValue knows the long options of the wrappers that take a
// separate value.
func longTakesValue(opt string) bool {
	switch opt {
	case "--signal", "--kill-after", "--adjustment", "--class", "--classdata", "--user", "--group",
		"--input", "--output", "--error", "--format", "--max-args", "--max-procs", "--max-lines",
		"--delimiter", "--arg-file", "--replace", "--eof", "--max-chars", "--chdir", "--unset":
		return true
	}
	return false
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "busybox": true, "fish": true, "yash": true, "posh": true}

// shell follows `bash -c CODE`, and `sh` reading a script from a pipe, a
// here-document or a here-string.
func (w *walk) shell(c *syntax.CallExpr, rest []string, hop int) {
	if len(rest) > 0 && rest[0] == "sh" { // busybox sh
		rest = rest[1:]
	}
	words := c.Args[len(c.Args)-len(rest):]
	if hop > 0 {
		words = nil
	}
	readsStdin := true
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-c" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'c')):
			if i+1 >= len(rest) {
				return
			}
			code := rest[i+1]
			if words != nil {
				code = codeText(words[i+1])
			}
			w.g.script(code, w.depth+1)
			return
		case a == "-o" || a == "-O" || a == "+o" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case a == "-s" || a == "--":
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
		default:
			readsStdin = false // runs a script file the guard cannot see
		}
		if !readsStdin {
			break
		}
	}
	if !readsStdin {
		return
	}
	st := w.stmtOf[c]
	if st == nil {
		return
	}
	if code, ok := w.stdin(st); ok {
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
		return w.filter(cmd.Y, in, true, depth)
	case *syntax.CallExpr:
		in, ok := w.stdin(st)
		return w.filter(st, in, ok, depth)
	}
	return "", false
}

// filter runs a known producer or filter over input.
func (w *walk) filter(st *syntax.Stmt, in string, inOK bool, depth int) (string, bool) {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) == 0 {
		return "", false
	}
	var args []string
	for _, a := range c.Args {
		s, lit := wordValue(a)
		if !lit {
			return "", false
		}
		args = append(args, s)
	}
	switch path.Base(args[0]) {
	case "echo":
		rest := args[1:]
		nl := "\n"
		for len(rest) > 0 && (rest[0] == "-n" || rest[0] == "-e" || rest[0] == "-E") {
			if rest[0] == "-n" {
				nl = ""
			}
			rest = rest[1:]
		}
		return strings.Join(rest, " ") + nl, true
	case "printf":
		if len(args) < 2 {
			return "", false
		}
		format := strings.ReplaceAll(args[1], `\n`, "\n")
		if len(args) == 2 && !strings.Contains(format, "%") {
			return format, true
		}
		if strings.Count(format, "%") == 1 && strings.Contains(format, "%s") {
			var b strings.Builder
			for _, a := range args[2:] {
				b.WriteString(strings.Replace(format, "%s", a, 1))
			}
			return b.String(), true
		}
		return "", false
	case "cat":
		if len(args) == 1 && inOK {
			return in, true
		}
	case "base64":
		if !inOK {
			return "", false
		}
		decode := false
		for _, a := range args[1:] {
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
	return "", false
}

// find follows -exec/-execdir/-ok and checks -delete.
func (w *walk) find(c *syntax.CallExpr, rest []string, hop int) {
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(rest) && rest[j] != ";" && rest[j] != "+" {
				j++
			}
			sub := make([]string, 0, j-i-1)
			for _, a := range rest[i+1 : j] {
				if a == "{}" {
					a = dynamic // the file name find substitutes
				}
				sub = append(sub, a)
			}
			w.command(c, sub, hop+1)
			i = j
		case "-delete":
			// With no test to select files, find -delete removes everything
			// under its start paths.
			selects := false
			for _, a := range rest {
				switch a {
				case "-delete", "-depth", "-mindepth", "-maxdepth", "-xdev", "-mount", "-L", "-P", "-H", "-print", "-ignore_readdir_race":
				default:
					if strings.HasPrefix(a, "-") {
						selects = true
					}
				}
			}
			for _, p := range rest {
				if strings.HasPrefix(p, "-") || p == "!" || p == "(" {
					break
				}
				if why := w.g.protectedState(p); why != "" {
					w.g.verdict(Deny, "find -delete under %s; %s", p, why)
				}
				if !selects {
					w.rmTree("find -delete", p)
				}
			}
		}
	}
}

// flock runs its command after the lock file: flock FILE CMD or flock FILE -c CODE.
func (w *walk) flock(c *syntax.CallExpr, rest []string, hop int) {
	i := skipOptions(rest, "wEc")
	for j, a := range rest {
		if (a == "-c" || a == "--command") && j+1 < len(rest) {
			w.g.script(rest[j+1], w.depth+1)
			return
		}
	}
	if i+1 < len(rest) {
		w.command(c, rest[i+1:], hop+1)
	}
}

// files checks commands that delete or overwrite files.
func (w *walk) files(base string, rest []string) {
	operands := func() []string {
		var ops []string
		dash := false
		for _, a := range rest {
			if !dash && a == "--" {
				dash = true
				continue
			}
			if !dash && strings.HasPrefix(a, "-") && a != "-" {
				continue
			}
			ops = append(ops, a)
		}
		return ops
	}
	switch base {
	case "rm", "rmdir", "unlink", "shred", "truncate", "srm", "trash", "trash-put", "gio":
		recursive := false
		for _, a := range rest {
			if a == "--" {
				break
			}
			if a == "--recursive" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "rR")) {
				recursive = true
			}
		}
		for _, p := range operands() {
			if why := w.g.protectedState(p); why != "" {
				w.g.verdict(Deny, "%s %s deletes wiggum's state; %s", base, printable(p), why)
				continue
			}
			if w.g.isGitDir(p) {
				w.g.verdict(Deny, "%s %s deletes the repository's .git directory, with its history and wiggum's backups under refs/wiggum/", base, printable(p))
				continue
			}
			if recursive {
				w.rmTree(base, p)
			}
		}
	case "mv":
		for _, p := range operands() {
			if why := w.g.protectedState(p); why != "" {
				w.g.verdict(Deny, "mv %s moves wiggum's state; %s", printable(p), why)
			} else if w.g.isGitDir(p) {
				w.g.verdict(Deny, "mv %s moves the repository's .git directory away", printable(p))
			}
		}
	case "cp", "install", "ln", "rsync":
		ops := operands()
		for i, a := range rest {
			if (a == "-t" || a == "--target-directory") && i+1 < len(rest) {
				ops = append(ops, rest[i+1])
			}
			if strings.HasPrefix(a, "--target-directory=") {
				ops = append(ops, strings.TrimPrefix(a, "--target-directory="))
			}
		}
		if len(ops) > 0 {
			dst := ops[len(ops)-1]
			if why := w.g.protectedState(dst); why != "" {
				w.g.verdict(Deny, "%s overwrites wiggum's state at %s; %s", base, printable(dst), why)
			}
		}
	case "tee", "sponge":
		for _, p := range operands() {
			if why := w.g.protectedState(p); why != "" {
				w.g.verdict(Deny, "%s writes to %s; %s", base, printable(p), why)
			}
		}
	case "dd":
		for _, a := range rest {
			if p, ok := strings.CutPrefix(a, "of="); ok {
				if why := w.g.protectedState(p); why != "" {
					w.g.verdict(Deny, "dd writes to %s; %s", printable(p), why)
				}
			}
		}
	case "sed", "perl", "ruby":
		inPlace := false
		for _, a := range rest {
			if a == "--in-place" || strings.HasPrefix(a, "--in-place=") || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'i')) {
				inPlace = true
			}
		}
		if inPlace {
			for _, p := range operands() {
				if why := w.g.protectedState(p); why != "" {
					w.g.verdict(Deny, "%s -i rewrites %s; %s", base, printable(p), why)
				}
			}
		}
	}
}

// rmTree denies a recursive delete of /, the home directory, the working
// tree or one of their ancestors, and asks when the target is unknown.
func (w *walk) rmTree(base, p string) {
	if p == dynamic {
		w.g.verdict(Ask, "%s -r of a path only known at run time: if it is empty or the home directory this deletes far too much; spell the path out", base)
		return
	}
	target := strings.TrimSuffix(strings.TrimSuffix(p, "*"), "/")
	if target == "" && strings.HasPrefix(p, "/") {
		target = "/"
	}
	dirs := w.dirs
	if len(dirs) > 1 {
		// The command changes directory first; the rm runs over there.
		dirs = dirs[1:]
	}
	for _, dir := range dirs {
		var abs string
		if target == "" { // "*" in dir
			abs = dir
		} else {
			abs = w.g.resolve(dir, target)
		}
		if abs == "" {
			if !filepath.IsAbs(target) && !strings.HasPrefix(target, "~") && (target == "." || target == ".." || strings.HasPrefix(target, "../") || target == "") {
				w.g.verdict(Ask, "%s -r %s from a directory wiggum's guard cannot know; spell the path out", base, printable(p))
			}
			continue
		}
		if what := w.g.precious(abs); what != "" {
			w.g.verdict(Deny, "%s -r %s deletes %s", base, printable(p), what)
			return
		}
	}
}

// precious names abs when deleting it recursively would destroy the
// machine's root, the home directory or the working tree.
func (g *guard) precious(abs string) string {
	within := func(child, parent string) bool {
		if parent == "" {
			return false
		}
		rel, err := filepath.Rel(child, parent)
		return err == nil && (rel == "." || !strings.HasPrefix(rel, ".."))
	}
	switch {
	case abs == "/":
		return "the whole file system"
	case g.in.Home != "" && within(abs, g.in.Home):
		return "the home directory " + g.in.Home
	case g.in.Root != "" && within(abs, g.in.Root):
		return "the whole working tree " + g.in.Root + " (and wiggum's state and checkpoint in it)"
	}
	return ""
}

// protectedState explains why p must not be written or deleted, or returns
// "" when p is not wiggum's state. Globs count when they could match.
func (g *guard) protectedState(p string) string {
	if p == "" || strings.Contains(p, "refs/wiggum") {
		if p != "" {
			return "refs/wiggum/ holds wiggum's backups of everything a rollback discarded; list them with `wiggum recover`"
		}
		return ""
	}
	const why = "it is wiggum's session state (agent lock, checkpoint, journal); use wiggum commands (`wiggum status`, `wiggum rollback`) instead"
	parts := strings.Split(filepath.ToSlash(p), "/")
	for i, part := range parts {
		if ok, _ := path.Match(part, ".ralph"); !ok || part == "" {
			continue
		}
		rest := parts[i+1:]
		for len(rest) > 0 && (rest[0] == "" || rest[0] == ".") {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return why
		}
		for _, name := range []string{".agent-lock", ".agent-lock.json", "wiggum"} {
			if ok, _ := path.Match(rest[0], name); ok {
				return why
			}
		}
	}
	return ""
}

// isGitDir reports whether p names the working tree's .git (or a glob that
// matches it) rather than some other repository's.
func (g *guard) isGitDir(p string) bool {
	parts := strings.Split(filepath.ToSlash(strings.TrimRight(p, "/")), "/")
	last := parts[len(parts)-1]
	if ok, _ := path.Match(last, ".git"); !ok || strings.Contains(p, dynamic) {
		return false
	}
	if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
		return true
	}
	return g.in.Root != "" && filepath.Clean(p) == filepath.Join(g.in.Root, ".git")
}

// wordValue returns the value a word has after quote removal, and whether it
// is fully known before running. Unknown parts read as dynamic; $HOME reads
// as ~.
func wordValue(w *syntax.Word) (string, bool) {
	var b strings.Builder
	lit := wordParts(&b, w.Parts, false)
	return b.String(), lit
}

func wordParts(b *strings.Builder, parts []syntax.WordPart, quoted bool) bool {
	lit := true
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if !wordParts(b, p.Parts, true) {
				lit = false
			}
		case *syntax.ParamExp:
			if p.Param != nil && p.Param.Value == "HOME" && p.Exp == nil && p.Repl == nil && p.Slice == nil && !p.Length && !p.Excl && p.Index == nil {
				b.WriteString("~")
				continue
			}
			b.WriteString(dynamic)
			lit = false
		default:
			b.WriteString(dynamic)
			lit = false
		}
	}
	return lit
}

// unescape removes the backslashes the shell would remove.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			next := s[i+1]
			if !quoted || strings.IndexByte("$`\"\\\n", next) >= 0 {
				if next != '\n' {
					b.WriteByte(next)
				}
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// codeText turns a word holding shell code (the argument of bash -c or
// eval, a here-document body) into source to parse: quotes are removed,
// expansions stay as written so the parse sees them as unknown.
func codeText(w *syntax.Word) string {
	var b strings.Builder
	codeParts(&b, w.Parts, false)
	return b.String()
}

func codeParts(b *strings.Builder, parts []syntax.WordPart, quoted bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			codeParts(b, p.Parts, true)
		default:
			var buf bytes.Buffer
			if err := syntax.NewPrinter().Print(&buf, &syntax.Word{Parts: []syntax.WordPart{p}}); err != nil {
				b.WriteString("$__wiggum_unknown")
				continue
			}
			b.Write(buf.Bytes())
		}
	}
}

func printable(s string) string {
	return strings.ReplaceAll(s, dynamic, "…")
}
