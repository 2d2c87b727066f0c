package guard

import (
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// walk checks one parsed script.
type walk struct {
	g        *guard
	file     *syntax.File // the script being walked
	depth    int
	pipeFrom map[*syntax.Stmt]*syntax.Stmt // a pipeline stage -> the stage feeding its stdin
	stmtOf   map[*syntax.CallExpr]*syntax.Stmt
	dirs     []string          // directories commands may run in ("" = unknown)
	argSrc   []*syntax.Word    // the word each argument of the current command came from
	written  map[string]string // files the script writes with static text, by cleaned path
	branches []string          // branches the script may have checked out
	// readStdin is set while computing the code a shell or interpreter
	// reads on stdin: only then are files fed to it read from disk.
	readStdin bool
}

func (w *walk) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		if c, ok := n.Cmd.(*syntax.CallExpr); ok {
			w.stmtOf[c] = n
		}
		for _, r := range n.Redirs {
			w.redirect(r)
			w.record(n, r)
		}
	case *syntax.BinaryCmd:
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			w.pipeFrom[n.Y] = n.X
		}
	case *syntax.CallExpr:
		w.call(n)
	case *syntax.DeclClause:
		w.assigns(n.Args)
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
	dirs := []string{w.g.p.Cwd}
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
		if g.p.Home == "" {
			return ""
		}
		return filepath.Join(g.p.Home, strings.TrimPrefix(p, "~"))
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	case base == "":
		return ""
	}
	return filepath.Join(base, p)
}

// redirect denies writing into protected state through > and friends.
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
	if why := w.protected(target); why != "" {
		w.g.verdict(Deny, "this command writes to %s with a redirection: %s", printable(target), why)
	}
}

// record remembers the static text a statement writes into a file
// (echo 'git push' > p.sh, cat > p.sh <<EOF), so running that file later in
// the same command is checked like the text itself.
func (w *walk) record(st *syntax.Stmt, r *syntax.Redirect) {
	if r.Op != syntax.RdrOut && r.Op != syntax.AppOut && r.Op != syntax.RdrClob || r.Word == nil {
		return
	}
	target, lit := wordValue(r.Word)
	if !lit {
		return
	}
	out, ok := w.output(st, 0)
	if !ok {
		return
	}
	if w.written == nil {
		w.written = map[string]string{}
	}
	key := filepath.Clean(target)
	if r.Op == syntax.AppOut {
		out = w.written[key] + out
	}
	w.written[key] = out
}

// writtenFile returns the text the script wrote into path, if it did.
func (w *walk) writtenFile(path string) (string, bool) {
	text, ok := w.written[filepath.Clean(path)]
	return text, ok
}

// call checks one simple command.
func (w *walk) call(c *syntax.CallExpr) {
	w.assigns(c.Assigns)
	args, src, _, ok := w.g.expandArgs(c.Args)
	if !ok {
		return
	}
	w.argSrc = src
	w.command(c, args, 0)
}

// code returns the shell code an argument holds: rest ends the command's
// arguments and i indexes it. At the top level the argument's own word is
// read, so expansions in it stay unknown rather than empty; past a wrapper
// only its value is known.
func (w *walk) code(rest []string, i, hop int) string {
	if hop == 0 && len(rest) <= len(w.argSrc) {
		return codeText(w.argSrc[len(w.argSrc)-len(rest)+i])
	}
	return rest[i]
}

// command checks argv: wrappers (env, timeout, sudo, xargs, ...) are
// stripped and their command checked; shells and eval have their code
// parsed; git and file commands go to their rules.
func (w *walk) command(c *syntax.CallExpr, args []string, hop int) {
	if len(args) == 0 || w.g.allowed(args) {
		return
	}
	if hop > maxHops {
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
	if text, ok := w.writtenFile(name); ok && strings.Contains(name, "/") {
		w.g.script(text, w.depth+1) // ./p.sh written earlier in the command
		return
	}
	base := path.Base(name)
	rest := args[1:]
	if w.wrapper(c, base, rest, hop) {
		return
	}
	if w.publishes(base, rest) {
		return
	}
	switch {
	case base == "git":
		w.git(rest)
	case base == "kill" || base == "pkill" || base == "killall" || base == "killall5":
		w.signals(c, base, rest)
	case isForge(base):
		w.forge(base, rest)
	case base == "go" && goEnvWrites(rest):
		w.g.verdict(Deny, "go %s changes your own Go environment, read by every go command and kept after the session (GOFLAGS=-run=^$ there makes every go test run nothing, wiggum's gate's included); set the variable for one command instead (GOFLAGS=... go test ./...)", printable(strings.Join(rest, " ")))
	case base == "make" || base == "gmake":
		w.makeGoals(rest)
		w.files(base, rest)
	case packageManagers[base] || (base == "bun" && len(rest) > 0 && rest[0] == "run"):
		w.packageScripts(base, rest)
		w.files(base, rest)
	case IsShell(base):
		w.shell(c, rest, hop)
	case language(base) != "":
		w.interp(c, base, rest, hop)
		w.files(base, rest) // perl -i, ruby -i
	default:
		if strings.Contains(name, "/") {
			w.runFile(name) // ./push.sh
		}
		w.files(base, rest)
	}
}

// goEnvWrites reports whether go's arguments rest are go env -w or -u
// (after go's own -C DIR, in any of the flag package's spellings).
func goEnvWrites(rest []string) bool {
	if len(rest) > 1 && rest[0] == "-C" {
		rest = rest[2:]
	} else if len(rest) > 0 && (strings.HasPrefix(rest[0], "-C=") || strings.HasPrefix(rest[0], "--C=")) {
		rest = rest[1:]
	}
	if len(rest) == 0 || rest[0] != "env" {
		return false
	}
	for _, a := range rest[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "w" || name == "u") {
			return true
		}
	}
	return false
}
