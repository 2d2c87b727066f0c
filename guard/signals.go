package guard

import (
	"cmp"
	"path"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	sh "mvdan.cc/sh/v3/syntax"
)

// The wiggum run that supervises the agent is not the agent's to signal:
// stopped (SIGSTOP), it hangs with the lock held; killed, it leaves its
// attempt unfinished. kill, pkill and killall are judged against it: its
// process name, the command lines it runs under, and the pid the session's
// lock record names (Policy.Supervisor).

// leaveWiggum is what every denial here tells the agent to do instead.
const leaveWiggum = "leave wiggum be: the run ends the attempt itself when the agent is done, and `wiggum status` shows how it stands"

// wiggumLines are the command lines a session's wiggum processes run
// under (the run or lock holding the session, and the supervisors it
// starts the agent under, by the executable's path), one a line, for a
// pkill -f pattern.
const wiggumLines = "wiggum\nwiggum run\nwiggum lock\nwiggum __supervise serve\nwiggum __supervise 5s\n/bin/wiggum __supervise serve"

// lines is what a pattern is matched against: wiggum's process name, or
// with full its command lines, the lock holder's own among them.
func (g *guard) lines(full bool) string {
	switch {
	case !full:
		return "wiggum"
	case len(g.p.SupervisorArgs) > 0:
		return wiggumLines + "\n" + strings.Join(g.p.SupervisorArgs, " ")
	}
	return wiggumLines
}

// signals judges kill, pkill and killall (base), whose arguments are rest.
func (w *walk) signals(c *sh.CallExpr, base string, rest []string) {
	switch base {
	case "kill":
		w.kill(c, rest)
	case "pkill":
		sig, pat, ok := procArgs("pkill", rest)
		switch {
		case sig == "0":
		case ok:
			w.pattern("pkill", pat)
		case byUser(rest):
			w.g.firm(Deny, "pkill %s signals every process of that user or terminal, the wiggum run that supervises this agent among them, stopping it mid-run; name the program too (pkill -u USER NAME), and %s", printable(strings.Join(rest, " ")), leaveWiggum)
		}
	case "killall":
		w.killall(rest)
	case "killall5":
		// sysvinit's: every process but the kernel's and the caller's
		// own session, whatever its arguments but a signal 0.
		if sig, _, _ := killArgs(rest); sig != "0" {
			w.g.firm(Deny, "killall5 signals every process outside this shell's session, the wiggum run that supervises this agent among them, stopping it mid-run; signal your own processes by pid, and %s", leaveWiggum)
		}
	}
}

// byUser reports whether pkill's arguments choose processes by user
// (-u, -U, --euid, --uid) or by terminal (-t, --terminal): every process
// there, wiggum's among them.
func byUser(rest []string) bool {
	for _, a := range rest {
		switch {
		case a == "--":
			return false
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a, "=")
			if longOpt(name, "--euid", 3) || longOpt(name, "--uid", 4) || longOpt(name, "--terminal", 3) {
				return true
			}
		case len(a) > 1 && a[0] == '-' && !signalName(a[1:]):
			for j := 1; j < len(a); j++ {
				if a[j] == 'u' || a[j] == 'U' || a[j] == 't' {
					return true
				}
				if strings.IndexByte("dgGPsFrq", a[j]) >= 0 {
					break // a value follows
				}
			}
		}
	}
	return false
}

// kill denies signalling the supervising wiggum by the pid its lock
// record names, every process at once (pid -1), or the pids pgrep or
// pidof finds by a pattern that matches wiggum ($(pgrep wiggum), and
// pgrep wiggum | xargs kill). A signal 0 only probes; a job (%1) or a pid
// known at run time ($!) is the shell's own.
func (w *walk) kill(c *sh.CallExpr, rest []string) {
	sig, pids, ok := killArgs(rest)
	if !ok || sig == "0" {
		return
	}
	sup := w.g.p.Supervisor
	for _, p := range pids {
		switch {
		case p == "-1":
			w.g.firm(Deny, "kill %s signals every process you may signal, the wiggum run that supervises this agent among them, stopping it mid-run; signal your own processes by pid, and %s", printable(strings.Join(rest, " ")), leaveWiggum)
			return
		case sup > 0 && strings.TrimPrefix(p, "-") == strconv.Itoa(sup):
			w.g.firm(Deny, "kill %s signals the wiggum run that supervises this agent (pid %d, its lock record says), stopping it mid-run; %s", printable(strings.Join(rest, " ")), sup, leaveWiggum)
			return
		}
	}
	var found, unknown string
	look := func(n sh.Node) {
		f, u := w.findsWiggum(n)
		found, unknown = cmp.Or(found, f), cmp.Or(unknown, u)
	}
	for _, word := range c.Args {
		sh.Walk(word, func(n sh.Node) bool {
			if cs, ok := n.(*sh.CmdSubst); ok {
				look(cs)
			}
			return true
		})
	}
	if st := w.stmtOf[c]; st != nil && w.pipeFrom[st] != nil {
		look(w.pipeFrom[st]) // pgrep wiggum | xargs kill
	}
	if found == "" && unknown == "" && w.file != nil && runtimePidVar(c.Args) {
		// A pid only known at run time, in a script that finds
		// wiggum's: p=$(pgrep wiggum); kill $p, a for loop over them,
		// pgrep wiggum | while read p; do kill $p; done.
		look(w.file)
	}
	switch {
	case found != "":
		w.g.firm(Deny, "kill signals what `%s` finds, the wiggum run that supervises this agent among them, stopping it mid-run; %s", found, leaveWiggum)
	case unknown != "":
		w.g.verdict(Ask, "kill signals what `%s` finds, by a pattern only known at run time that may match the wiggum run supervising this agent; match only your own processes, and %s", unknown, leaveWiggum)
	}
}

// findsWiggum returns the first pgrep or pidof command in n whose pattern
// matches wiggum ("pgrep -f wiggum"), and the first whose pattern is only
// known at run time and may; "" for none.
func (w *walk) findsWiggum(n sh.Node) (found, unknown string) {
	sh.Walk(n, func(n sh.Node) bool {
		c, ok := n.(*sh.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		args, _, _, ok := w.g.expandArgs(c.Args)
		if !ok || len(args) == 0 {
			return false
		}
		var pats []procPattern
		switch path.Base(args[0]) {
		case "pgrep":
			if _, p, ok := procArgs("pgrep", args[1:]); ok {
				pats = append(pats, p)
			}
		case "pidof":
			for _, name := range pidofNames(args[1:]) {
				pats = append(pats, exactName(name, false))
			}
		case "grep", "egrep", "fgrep", "rg":
			// ps aux | grep wiggum | awk '{print $2}' | xargs kill
			if pat, ok := grepPattern(args[1:]); ok {
				pats = append(pats, procPattern{text: pat, full: true, regex: path.Base(args[0]) != "fgrep"})
			}
		}
		for _, a := range args[1:] {
			// cat .ralph/.agent-lock.json | jq .pid: the pid the
			// lock's holder record names, read at run time.
			if strings.Contains(a, ".agent-lock") {
				found = cmp.Or(found, printable(strings.Join(args, " ")))
			}
		}
		for _, p := range pats {
			switch {
			case !p.matches(w.g.lines(p.full)):
			case strings.Contains(p.text, dynamic):
				unknown = cmp.Or(unknown, printable(strings.Join(args, " ")))
			default:
				found = cmp.Or(found, printable(strings.Join(args, " ")))
			}
		}
		return true
	})
	return found, unknown
}

// grepPattern is the pattern a grep is given: -e's value, or its first
// argument that is no option.
func grepPattern(rest []string) (string, bool) {
	for i := 0; i < len(rest); i++ {
		switch a := rest[i]; {
		case a == "-e" || a == "--regexp":
			if i+1 < len(rest) {
				return rest[i+1], true
			}
			return "", false
		case strings.HasPrefix(a, "--regexp="):
			return strings.TrimPrefix(a, "--regexp="), true
		case a == "--":
			if i+1 < len(rest) {
				return rest[i+1], true
			}
			return "", false
		case strings.HasPrefix(a, "-"):
		default:
			return a, true
		}
	}
	return "", false
}

// runtimePidVar reports whether one of kill's words takes a pid from a
// shell variable ($p, ${p}) - not $! (the shell's last background job)
// or $$ (the shell itself), which are the shell's own.
func runtimePidVar(words []*sh.Word) bool {
	found := false
	for _, word := range words {
		for _, part := range word.Parts {
			if pe, ok := part.(*sh.ParamExp); ok && pe.Param != nil && pe.Param.Value != "!" && pe.Param.Value != "$" {
				found = true
			}
		}
	}
	return found
}

// killArgs reads kill's arguments as bash's kill does (util-linux's
// spellings too): the signal ("" for the default) and the pids; ok is
// false when kill only lists signals or is missing an option's value.
func killArgs(rest []string) (sig string, pids []string, ok bool) {
	saw := false
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-l" || a == "-L" || strings.HasPrefix(a, "--list") || a == "--table":
			return "", nil, false
		case a == "-s" || a == "-n" || a == "--signal":
			if i+1 >= len(rest) {
				return "", nil, false
			}
			i++
			sig, saw = rest[i], true
		case strings.HasPrefix(a, "--signal="):
			sig, saw = strings.TrimPrefix(a, "--signal="), true
		case a == "--":
			i++
			return sig, rest[i:], true
		case len(a) > 1 && a[0] == '-' && !saw:
			sig, saw = a[1:], true // -9, -KILL, -sSTOP, -n9
			if (a[1] == 's' && len(a) > 2 && isUpper(a[2])) || (a[1] == 'n' && len(a) > 2 && isDigit(a[2])) {
				sig = a[2:]
			}
		default:
			return sig, rest[i:], true
		}
	}
	return sig, nil, true
}

// procPattern is what a pgrep, pkill or killall -r pattern is matched
// against, as the program reads its options.
type procPattern struct {
	text   string // the pattern, dynamic where only known at run time
	full   bool   // -f: the whole command line, not the process name
	exact  bool   // -x, or killall's plain names: the whole name
	fold   bool   // -i (killall -I): case ignored
	invert bool   // -v: the processes that do not match
	regex  bool   // a regular expression (pgrep, pkill, killall -r)
}

// procArgs reads pgrep's or pkill's arguments (procps): the signal pkill
// sends ("" for the default) and its pattern; ok is false when there is
// no pattern (processes chosen by user, parent, ... only).
func procArgs(prog string, rest []string) (sig string, p procPattern, ok bool) {
	p.regex = true
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			if i+1 < len(rest) {
				p.text, ok = rest[i+1], true
			}
			return sig, p, ok
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a, "=")
			switch {
			case longOpt(name, "--full", 3):
				p.full = true
			case longOpt(name, "--exact", 4):
				p.exact = true
			case longOpt(name, "--ignore-case", 10):
				p.fold = true
			case longOpt(name, "--inverse", 5):
				p.invert = true
			case procLongValue(name):
				if !hasValue && i+1 < len(rest) {
					i++
					value = rest[i]
				}
				if longOpt(name, "--signal", 4) {
					sig = value
				}
			}
		case len(a) > 1 && a[0] == '-':
			if prog == "pkill" && signalName(a[1:]) {
				sig = a[1:] // -9, -KILL, -SIGSTOP
				continue
			}
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'f':
					p.full = true
				case 'x':
					p.exact = true
				case 'i':
					p.fold = true
				case 'v':
					p.invert = true
				}
				if strings.IndexByte("dgGPstuUFrq", a[j]) >= 0 {
					if j == len(a)-1 {
						i++ // the value, apart: -u root
					}
					break
				}
			}
		default:
			if !ok {
				p.text, ok = a, true
			}
		}
	}
	return sig, p, ok
}

// procLongValue reports whether a long option of pgrep and pkill, given
// in full, takes a value.
func procLongValue(name string) bool {
	switch name {
	case "--delimiter", "--pgroup", "--group", "--parent", "--session", "--terminal", "--euid", "--uid",
		"--pidfile", "--ns", "--nslist", "--runstates", "--cgroup", "--signal", "--queue", "--env", "--older":
		return true
	}
	return false
}

// killall denies killall naming wiggum: by name (or its executable's
// path), or by a -r pattern that matches the name.
func (w *walk) killall(rest []string) {
	regex, fold, user := false, false, false
	var names []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			names = append(names, rest[i+1:]...)
			i = len(rest)
		case a == "-l" || a == "--list" || a == "-V" || a == "--version":
			return
		case a == "-r" || a == "--regexp":
			regex = true
		case a == "-I" || a == "--ignore-case":
			fold = true
		case a == "-s" || a == "--signal":
			if i+1 < len(rest) && rest[i+1] == "0" {
				return
			}
			i++
		case a == "-u" || a == "--user":
			user = true
			i++
		case a == "-o" || a == "--older-than" || a == "-y" || a == "--younger-than" || a == "-n" || a == "--ns" || a == "-Z" || a == "--context":
			i++
		case a == "--signal=0":
			return
		case len(a) > 1 && a[0] == '-' && signalName(a[1:]):
			if a == "-0" {
				return // a probe
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'r':
					regex = true
				case 'I':
					fold = true
				}
				if strings.IndexByte("suoynZ", a[j]) >= 0 {
					if j == len(a)-1 {
						i++ // the value, apart: -vu root
					}
					break
				}
			}
		default:
			names = append(names, a)
		}
	}
	if len(names) == 0 && user {
		w.g.firm(Deny, "killall %s signals every process of that user, the wiggum run that supervises this agent among them, stopping it mid-run; name the program too, and %s", printable(strings.Join(rest, " ")), leaveWiggum)
		return
	}
	for _, name := range names {
		p := exactName(name, fold)
		if regex {
			// psmisc matches -r anywhere in the name, unanchored.
			p = procPattern{text: name, fold: fold, regex: true}
		}
		w.pattern("killall", p)
	}
}

// pidofNames are the program names pidof is given.
func pidofNames(rest []string) []string {
	var names []string
	for i := 0; i < len(rest); i++ {
		switch a := rest[i]; {
		case a == "-o" || a == "-d" || a == "-S":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			names = append(names, a)
		}
	}
	return names
}

// exactName is a pattern matching the process name (or the executable's
// base name, for a path) exactly, as killall and pidof match names.
func exactName(name string, fold bool) procPattern {
	if !strings.Contains(name, dynamic) && strings.Contains(name, "/") {
		name = path.Base(name)
	}
	return procPattern{text: name, exact: true, fold: fold}
}

// pattern denies a process pattern of prog's that matches wiggum, and
// asks about one it cannot read or only knows at run time.
func (w *walk) pattern(prog string, p procPattern) {
	if p.regex && !strings.Contains(p.text, dynamic) {
		if _, err := syntax.Parse(p.text, syntax.POSIX); err != nil {
			w.g.verdict(Ask, "%s's pattern %q is not a regular expression wiggum's guard can read, so it cannot tell whether it would also signal the wiggum run that supervises this agent", prog, p.text)
			return
		}
	}
	if !p.matches(w.g.lines(p.full)) {
		return
	}
	if strings.Contains(p.text, dynamic) {
		w.g.verdict(Ask, "%s's pattern %s is only known at run time and may match wiggum's processes, stopping the wiggum run that supervises this agent; match only your own processes, and %s", prog, printable(p.text), leaveWiggum)
		return
	}
	what := "matches wiggum's processes"
	if p.invert {
		what = "leaves out wiggum's processes, which -v selects"
	}
	w.g.firm(Deny, "%s would signal the wiggum run that supervises this agent (its pattern %q %s), stopping it mid-run; match only your own processes, and %s", prog, p.text, what, leaveWiggum)
}

// matches reports whether the pattern selects one of lines (a process
// name, or command lines), one a line. Text only known at run time
// matches anything there; a pattern that does not compile matches nothing
// (the program refuses it).
func (p procPattern) matches(lines string) bool {
	var expr strings.Builder
	for i, part := range strings.Split(p.text, dynamic) {
		if i > 0 {
			expr.WriteString(".*")
		}
		if p.regex {
			expr.WriteString(part)
		} else {
			expr.WriteString(regexp.QuoteMeta(part))
		}
	}
	flags := syntax.POSIX
	if p.fold {
		flags |= syntax.FoldCase
	}
	parsed, err := syntax.Parse(expr.String(), flags)
	if err != nil {
		return false
	}
	src := parsed.String()
	if p.exact {
		src = "^(?:" + src + ")$"
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(lines, "\n") {
		if re.MatchString(line) != p.invert {
			return true
		}
	}
	return false
}

// signalName reports whether s (an option without its dash) names a
// signal as pkill takes it: a number, or a name in capitals (KILL,
// SIGSTOP), not one of the capital letters pkill's options use (-P, -U).
func signalName(s string) bool {
	if s == "" {
		return false
	}
	if _, err := strconv.Atoi(s); err == nil {
		return true
	}
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isUpper(s[i]) && !isDigit(s[i]) && s[i] != '+' && s[i] != '-' {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
