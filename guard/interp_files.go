package guard

import (
	"path/filepath"
	"strings"
)

// interpFile judges an interpreter call that deletes or overwrites a file
// (shutil.rmtree, fs.rmSync, unlink, open(..., "w")): denied when its path
// is a literal naming wiggum's state, .git or a file in it, the working
// tree, the home directory or the root.
func (g *guard) interpFile(l *lexed, name string, kind callKind, args []literal, from, to int) {
	// The first argument: up to the first comma outside brackets.
	end := to
	depth := 0
	for i := from; i < to && i < len(l.masked); i++ {
		switch l.masked[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				end = i
			}
		}
		if end != to {
			break
		}
	}
	var first []literal
	for _, a := range args {
		if a.start >= from && a.start < end {
			first = append(first, a)
		}
	}
	if kind == writesFile && name == "open" && !writeMode(args, first) {
		return
	}
	if len(first) == 0 {
		first = l.receiver(from, name) // Path(".ralph").unlink()
	}
	if len(first) == 0 {
		return
	}
	parts := make([]string, len(first))
	for i, a := range first {
		parts[i] = a.value
	}
	p := strings.Join(parts, "/") // os.path.join(".ralph", "wiggum")
	if why := g.interpPathWhy(p); why != "" {
		verb := "deletes"
		if kind == writesFile {
			verb = "overwrites"
		}
		g.verdict(Deny, "this %s code %s %s (%s): %s", l.lang, verb, printable(p), name, why)
	}
}

// writeMode reports whether python's open is given a mode that writes:
// any literal after the path made only of mode letters, holding w, a, x or +.
func writeMode(args, first []literal) bool {
	for _, a := range args[len(first):] {
		if a.value != "" && strings.Trim(a.value, "rwxabt+") == "" && strings.ContainsAny(a.value, "wax+") {
			return true
		}
	}
	return false
}

// receiver returns the literals of the call a method was called on:
// Path(".ralph") in Path(".ralph").unlink(). from is just past the
// method's opening bracket, or at its first argument.
func (l *lexed) receiver(from int, name string) []literal {
	i := from - 1
	for i >= 0 && (l.masked[i] == '(' || isSpace(l.masked[i])) {
		i--
	}
	i -= len(name)
	if i < 1 || l.masked[i] != '.' || l.masked[i-1] != ')' {
		return nil
	}
	closeAt, depth := i-1, 0
	open := -1
	for j := closeAt; j >= 0; j-- {
		switch l.masked[j] {
		case ')', ']', '}':
			depth++
		case '(', '[', '{':
			depth--
		}
		if depth == 0 {
			open = j
			break
		}
	}
	if open < 0 {
		return nil
	}
	var out []literal
	for _, lit := range l.lits {
		if lit.start > open && lit.end <= closeAt {
			out = append(out, lit)
		}
	}
	return out
}

// interpPathWhy explains why code must not delete or overwrite the path
// p, or returns "".
func (g *guard) interpPathWhy(p string) string {
	if p == "" || strings.Contains(p, unknownCode) {
		return ""
	}
	if why := g.protectedState(p); why != "" {
		return why
	}
	if why := g.gitData(p); why != "" {
		return why
	}
	if g.isGitDir(p) {
		return "that is the repository's .git directory, with its history and wiggum's backups"
	}
	abs := g.resolve(g.p.Cwd, p)
	if abs == "" {
		return ""
	}
	if g.p.Root != "" {
		if rel, err := filepath.Rel(g.p.Root, abs); err == nil && filepath.IsLocal(rel) {
			if why := g.protectedState(rel); why != "" {
				return why
			}
			if why := g.gitData(rel); why != "" {
				return why
			}
			if g.isGitDir(rel) {
				return "that is the repository's .git directory, with its history and wiggum's backups"
			}
		}
	}
	if why := g.linkedConfigWhy(abs); why != "" {
		return why
	}
	if what := g.precious(abs); what != "" {
		return "that is " + what
	}
	return ""
}

// perlOpenWrites judges perl's open for writing: open(F, ">path"),
// open(F, ">>path"), open(F, "+<path") (two-argument forms, the mode in the
// path's literal) and open(F, ">", "path") (three-argument forms).
func (g *guard) perlOpenWrites(l *lexed, name string, args []literal) {
	for i, a := range args {
		v := strings.TrimSpace(a.value)
		mode := strings.TrimRight(v[:len(v)-len(strings.TrimLeft(v, "+<>"))], " ")
		if !strings.ContainsAny(mode, ">+") {
			continue
		}
		p := strings.TrimSpace(v[len(mode):])
		if strings.HasPrefix(p, ":") {
			p = "" // a layer (">:utf8"): the path is the next argument
		}
		if p == "" && i+1 < len(args) {
			p = args[i+1].value
		}
		if p == "" || strings.HasPrefix(p, "&") {
			return // a handle duplicated, or a path known only at run time
		}
		if why := g.interpPathWhy(p); why != "" {
			g.verdict(Deny, "this %s code overwrites %s (%s): %s", l.lang, printable(p), name, why)
		}
		return
	}
}
