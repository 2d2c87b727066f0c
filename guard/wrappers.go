package guard

import (
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
	case "nice", "ionice", "nohup", "setsid", "stdbuf", "time", "chronic", "unbuffer", "sudo", "doas", "builtin", "exec", "caffeinate", "taskset", "chrt", "systemd-run", "firejail", "catchsegv", "strace", "ltrace", "command":
		w.prefixWrapper(c, base, rest, hop)
	case "xargs":
		i := skipOptions(rest, "adEeIiLlnPs")
		tail := rest[min(i, len(rest)):]
		if len(tail) == 0 {
			return true // xargs runs echo
		}
		// The arguments xargs appends come from stdin: unknown.
		w.command(c, append(append([]string{}, tail...), dynamic), hop+1)
	case "find":
		w.find(c, rest, hop)
	case "eval":
		w.eval(c, rest, hop)
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
		for i, a := range rest {
			if (a == "-c" || a == "--command") && i+1 < len(rest) {
				w.g.script(rest[i+1], w.depth+1)
			}
		}
	case "flock":
		w.flock(c, rest, hop)
	default:
		return false
	}
	return true
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

// eval parses its arguments as code. At the top level the words are taken
// as written, so expansions inside stay unknown rather than empty.
func (w *walk) eval(c *syntax.CallExpr, rest []string, hop int) {
	if hop > 0 {
		w.g.script(strings.Join(rest, " "), w.depth+1)
		return
	}
	var parts []string
	for _, a := range c.Args[len(c.Args)-len(rest):] {
		parts = append(parts, codeText(a))
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
			w.findDelete(rest)
		}
	}
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
		if why := w.g.protectedState(p); why != "" {
			w.g.verdict(Deny, "find -delete under %s; %s", p, why)
		}
		if !selects {
			w.rmTree("find -delete", p)
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
