package guard

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrapper checks the command a wrapper runs (env, timeout, nice, sudo,
// xargs, find -exec, eval, su -c, ...) and reports whether base is one.
func (w *walk) wrapper(c *syntax.CallExpr, base string, rest []string, hop int) bool {
	switch base {
	case "env":
		w.env(c, rest, hop)
	case "timeout":
		i := skipOptions(rest, "sk")
		w.command(c, rest[min(i+1, len(rest)):], hop+1) // +1: the duration
	case "nice", "ionice", "nohup", "setsid", "stdbuf", "time", "chronic", "unbuffer", "sudo", "doas", "builtin", "exec", "caffeinate", "taskset", "chrt", "systemd-run", "firejail", "catchsegv", "strace", "ltrace", "command", "xvfb-run", "torsocks", "proxychains", "proxychains4", "entr", "unshare":
		w.prefixWrapper(c, base, rest, hop)
	case "xargs":
		w.xargs(c, rest, hop)
	case "parallel":
		w.parallel(c, rest, hop)
	case "busybox":
		if len(rest) > 0 && IsShell(rest[0]) {
			w.shell(c, rest[1:], hop+1)
		} else {
			w.command(c, rest, hop+1)
		}
	case "source", ".":
		if len(rest) > 0 {
			w.scriptFile(c, rest, 0, hop)
		}
	case "find":
		w.find(c, rest, hop)
	case "eval":
		w.eval(rest, hop)
	case "alias":
		for _, a := range rest {
			if _, code, ok := strings.Cut(a, "="); ok {
				w.g.script(code, w.depth+1)
			}
		}
	case "trap":
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			w.g.script(rest[0], w.depth+1)
		}
	case "watch":
		i := skipOptions(rest, "nqd")
		if i < len(rest) {
			w.g.script(strings.Join(rest[i:], " "), w.depth+1)
		}
	case "su", "runuser", "script":
		w.commandOption(c, base, rest, hop)
	case "flock":
		w.flock(c, rest, hop)
	default:
		return w.launcher(c, base, rest, hop)
	}
	return true
}

// launcher checks the command a tool launches on the agent's behalf: a
// project runner (uv run, poetry run, bundle exec, npm exec), a terminal
// multiplexer (tmux, screen) or a scheduler reading its job on stdin (at,
// batch); it reports whether base is one.
func (w *walk) launcher(c *syntax.CallExpr, base string, rest []string, hop int) bool {
	switch base {
	case "npx", "bunx", "pnpx":
		// npx -y cdk deploy runs the package's program with the rest.
		i := skipOptions(rest, "p")
		w.command(c, rest[min(i, len(rest)):], hop+1)
	case "uv", "poetry", "pipenv", "pdm", "rye", "hatch", "bundle", "npm", "pnpm", "yarn":
		js := base == "npm" || base == "pnpm" || base == "yarn"
		if len(rest) < 2 || (rest[0] != "run" && rest[0] != "exec" && rest[0] != "dlx") || (js && rest[0] == "run") || (!js && rest[0] == "dlx") {
			return false
		}
		i := skipOptions(rest[1:], "")
		w.command(c, rest[1+i:], hop+1)
	case "screen":
		i := skipOptions(rest, "ScTpehsX")
		w.command(c, rest[min(i, len(rest)):], hop+1)
	case "tmux":
		w.tmux(rest)
	case "at", "batch":
		if !slices.Contains(rest, "-f") {
			w.shellStdin(c)
		}
	default:
		return false
	}
	return true
}

// tmux checks the shell command a new session, window or pane runs, and
// the keys send-keys types.
func (w *walk) tmux(rest []string) {
	i := skipOptions(rest, "LSfc")
	if i >= len(rest) {
		return
	}
	sub, args := rest[i], rest[i+1:]
	switch sub {
	case "new", "new-session", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp", "respawn-window", "respawnw":
		j := skipOptions(args, "cesntxyFlLbB")
		if j < len(args) {
			w.g.script(strings.Join(args[j:], " "), w.depth+1)
		}
	case "send-keys", "send":
		var keys []string
		for j := skipOptions(args, "tN"); j < len(args); j++ {
			if args[j] != "Enter" && args[j] != "C-m" && args[j] != "KPEnter" {
				keys = append(keys, args[j])
			}
		}
		w.g.script(strings.Join(keys, " "), w.depth+1)
	}
}

// env runs its command after options and VAR=value words; -S splits a
// string into a command line.
func (w *walk) env(c *syntax.CallExpr, rest []string, hop int) {
	i := 0
loop:
	for i < len(rest) {
		a := rest[i]
		switch {
		case a == "--":
			i++
			break loop
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
			name, value, _ := strings.Cut(a, "=")
			w.gitEnv(name, value)
			i++
		default:
			break loop
		}
	}
	w.command(c, rest[min(i, len(rest)):], hop+1)
}

// prefixWrapper handles wrappers whose command follows their options.
func (w *walk) prefixWrapper(c *syntax.CallExpr, base string, rest []string, hop int) {
	if base == "command" && len(rest) > 0 && (rest[0] == "-v" || rest[0] == "-V") {
		return
	}
	i := skipOptions(rest, wrapperValueOpts(base))
	if base == "taskset" || base == "chrt" {
		i++ // the mask or priority
	}
	w.command(c, rest[min(i, len(rest)):], hop+1)
}

// eval parses its arguments as code.
func (w *walk) eval(rest []string, hop int) {
	parts := make([]string, len(rest))
	for i := range rest {
		parts[i] = w.code(rest, i, hop)
	}
	w.g.script(strings.Join(parts, " "), w.depth+1)
}

// wrapperValueOpts lists, per wrapper, the short options that take a value.
func wrapperValueOpts(base string) string {
	switch base {
	case "nice":
		return "n"
	case "ionice":
		return "cnp"
	case "stdbuf":
		return "ioe"
	case "time":
		return "fo"
	case "sudo":
		return "ugpChrtTDR"
	case "doas":
		return "uC"
	case "exec":
		return "a"
	case "systemd-run":
		return "pEpu"
	case "strace":
		return "eoIpPsSuXbO"
	case "ltrace":
		return "eoplnsuSxXAaDF"
	}
	return ""
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
			// As getopt reads a cluster: the first option taking a value
			// takes the rest of the cluster (-n10), or the next argument
			// when it ends the cluster (-dmS name). Old nice takes -10.
			i++
			for j := 1; j < len(a); j++ {
				if strings.IndexByte(valueOpts, a[j]) >= 0 {
					if j == len(a)-1 && i < len(args) {
						i++
					}
					break
				}
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
		"--delimiter", "--arg-file", "--replace", "--eof", "--max-chars", "--chdir", "--unset",
		"--halt", "--jobs", "--sshlogin", "--delay", "--timeout", "--joblog", "--results", "--tagstring",
		"--colsep", "--tmpdir", "--workdir", "--memfree", "--load", "--retries", "--env", "--profile", "--command":
		return true
	}
	return false
}

// find follows -exec/-execdir/-ok and checks -delete.
func (w *walk) find(c *syntax.CallExpr, rest []string, hop int) {
	verb := ""
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
			if len(sub) > 0 && removes(path.Base(sub[0])) {
				verb = rest[i] + " " + sub[0]
			}
			w.command(c, sub, hop+1)
			i = j
		case "-delete":
			if verb != "-delete" {
				w.findDelete(rest)
			}
			verb = "-delete"
		}
	}
	if verb != "" {
		w.findDeletes(verb, rest)
	}
}

// removes reports whether the program base deletes the files it is given.
func removes(base string) bool {
	switch base {
	case "rm", "unlink", "shred", "srm", "rmdir", "trash", "trash-put":
		return true
	}
	return false
}

// findDelete: with no test to select files, find -delete removes
// everything under its start paths.
func (w *walk) findDelete(rest []string) {
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
		if why := w.protected(p); why != "" {
			w.g.verdict(Deny, "find -delete under %s: %s", printable(p), why)
		}
		if !selects {
			w.rmTree("find -delete", p)
		}
	}
}

// commandOption follows su, runuser and script: their -c CODE (also in a
// cluster such as -qc, or --command=CODE), runuser's "-- CMD", and BSD
// script's "script FILE CMD...".
func (w *walk) commandOption(c *syntax.CallExpr, base string, rest []string, hop int) {
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			if base == "runuser" {
				w.command(c, rest[i+1:], hop+1)
			}
			return
		}
		if code, ok := strings.CutPrefix(a, "--command="); ok {
			w.g.script(code, w.depth+1)
			return
		}
		if a == "--command" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "c")) {
			if i+1 < len(rest) {
				w.g.script(w.code(rest, i+1, hop), w.depth+1)
			}
			return
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "c") {
			// -cCODE: the rest of the cluster is the command.
			w.g.script(a[strings.IndexByte(a, 'c')+1:], w.depth+1)
			return
		}
	}
	if base == "script" {
		i := skipOptions(rest, "EIOBTmF")
		if i+1 < len(rest) {
			w.command(c, rest[i+1:], hop+1)
		}
	}
}

// xargs runs its command with arguments read from stdin: when stdin is
// static text (echo push | xargs git) they are known, else unknown.
func (w *walk) xargs(c *syntax.CallExpr, rest []string, hop int) {
	i := skipOptions(rest, "adEeIiLlnPs")
	tail := rest[min(i, len(rest)):]
	if len(tail) == 0 {
		return // xargs runs echo
	}
	replace := ""
	for j, a := range rest[:i] {
		if a == "-I" && j+1 < i {
			replace = rest[j+1]
		} else if r, ok := strings.CutPrefix(a, "-I"); ok && r != "" {
			replace = r
		} else if r, ok := strings.CutPrefix(a, "--replace="); ok {
			replace = r
		} else if a == "-i" || a == "--replace" {
			replace = "{}"
		}
	}
	if removes(path.Base(tail[0])) {
		w.removesListing(c, tail[0])
	}
	input, known := "", false
	if st := w.stmtOf[c]; st != nil && hop == 0 && !slices.ContainsFunc(rest[:i], func(a string) bool { return a == "-a" || strings.HasPrefix(a, "--arg-file") }) {
		input, known = w.stdin(st)
	}
	items := []string{dynamic}
	if known {
		items = strings.Fields(input)
	}
	if !w.g.spendWords(len(items), len(input)) {
		return
	}
	if replace == "" {
		w.command(c, append(append([]string{}, tail...), items...), hop+1)
		return
	}
	for _, item := range items {
		cmd := make([]string, len(tail))
		for j, a := range tail {
			cmd[j] = strings.ReplaceAll(a, replace, item)
		}
		w.command(c, cmd, hop+1)
	}
}

// parallel (GNU parallel) composes shell command lines from a command and
// the arguments after ::: (or stdin), and runs them in a shell.
func (w *walk) parallel(c *syntax.CallExpr, rest []string, hop int) {
	i := skipOptions(rest, "jSINndaEL")
	cmd, groups := parallelArgs(rest[i:])
	if len(groups) == 0 {
		input, known := "", false
		if st := w.stmtOf[c]; st != nil && hop == 0 {
			input, known = w.stdin(st)
		}
		lines := []string{dynamic}
		if known {
			lines = strings.Split(strings.TrimRight(input, "\n"), "\n")
		}
		groups = [][]string{lines}
	}
	lines := []string{strings.Join(cmd, " ")}
	for _, g := range groups {
		if !w.g.spendWords(len(lines)*len(g), 0) {
			return
		}
		var next []string
		for _, l := range lines {
			for _, v := range g {
				next = append(next, composeParallel(l, v))
			}
		}
		lines = next
	}
	for _, l := range lines {
		w.g.script(strings.ReplaceAll(l, dynamic, "$__wiggum_unknown"), w.depth+1)
	}
}

// parallelArgs splits parallel's operands into the command and the
// argument groups after each ::: (a :::: group, read from files, is
// unknown).
func parallelArgs(ops []string) (cmd []string, groups [][]string) {
	for _, a := range ops {
		switch {
		case a == ":::" || a == ":::+":
			groups = append(groups, nil)
		case a == "::::" || a == "::::+":
			groups = append(groups, []string{dynamic})
		case len(groups) == 0:
			cmd = append(cmd, a)
		case len(groups[len(groups)-1]) == 0 || groups[len(groups)-1][0] != dynamic:
			groups[len(groups)-1] = append(groups[len(groups)-1], a)
		}
	}
	return cmd, groups
}

// composeParallel puts one argument into a parallel command line: in place
// of {} when there is one, else appended.
func composeParallel(line, arg string) string {
	if strings.Contains(line, "{}") {
		return strings.ReplaceAll(line, "{}", arg)
	}
	return strings.TrimSpace(line + " " + arg)
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
