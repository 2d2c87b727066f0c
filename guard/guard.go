package guard

import (
	"fmt"
	"slices"
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
	Reason string // empty only for Allow
}

// Policy is what the caller knows about where a command runs and what it
// must not touch. The guard holds no path, ref or branch of its own.
type Policy struct {
	Cwd    string // absolute directory the command starts in
	Root   string // top of the working tree, "" when unknown
	Home   string // the user's home directory, "" when unknown
	Branch string // checked out in Root, "" when unknown or detached

	// ProtectedBranches are the branches nothing may be merged into (see
	// ProtectedBranches).
	ProtectedBranches []string
	// StatePaths are the caller's state, relative to Root with "/"
	// separators: never written, moved or deleted, nor any directory
	// holding them.
	StatePaths []string
	// Allow are the person's exceptions: a simple command whose words,
	// joined by single spaces (wrappers like env and timeout taken off,
	// each hop judged), match one of these patterns - * any run of
	// characters within a word, ** any run at all, ? one character - is
	// allowed, whatever a rule says of it ("git push origin feature/*",
	// "npm publish --dry-run", "make deploy-staging **").
	Allow []string
	// HookFiles are the git hook files the caller installed, relative to
	// Root (".git/hooks/pre-push"): never removed, disabled or overwritten.
	HookFiles []string
	// RefNamespace is the ref prefix the caller owns ("refs/x/"): no git
	// command may write or delete refs under it.
	RefNamespace string
	// ReadFile reads a script file a command runs by path (sh push.sh,
	// ./push.sh, python3 push.py), given its absolute path, so the guard
	// judges what the file holds. An error matching fs.ErrNotExist means
	// the command runs nothing; any other error, or more than MaxScript
	// bytes, is asked about. nil: script files are not read.
	ReadFile func(path string) ([]byte, error)
	// ReadDir lists the directories in a directory, given its absolute
	// path: the workspaces a package manager's pattern (packages/*) takes
	// in, whose package.json scripts a command like npm run build
	// --workspaces runs. nil: such patterns are not followed.
	ReadDir func(path string) ([]string, error)
	// BranchExists reports whether the local branch name exists, for
	// checkout -B and switch -C, which move an existing branch by force.
	// nil: such a command is asked about.
	BranchExists func(name string) bool
	// Supervisor is the pid of the wiggum holding the session's lock (the
	// lock's holder record names it), 0 when unknown: a kill naming it is
	// denied. SupervisorArgs is its command line, as the record has it: a
	// pkill -f pattern matching it is denied as one matching wiggum's
	// other command lines is.
	Supervisor     int
	SupervisorArgs []string
	// Preexisting reports whether a script file was last changed before
	// the agent's session began (a project's own ./gradlew, say), as
	// opposed to written during it. In such a script only clear denials
	// count: what the guard cannot follow there (a program held in a
	// variable) is the project's, not the agent's, and asking would stop
	// every Java build under agents that cannot ask. nil: every script is
	// judged as if the agent wrote it.
	Preexisting func(path string) bool
	// NoSession: the guard is on with no session (a hook installed with
	// --guard always): a reason says that setting denies, not a session
	// nobody is running.
	NoSession bool
}

// The reasons' words for when the rules apply, and what they say without
// a session (Policy.NoSession).
const (
	inSession     = "during a wiggum session"
	inSessionRule = "during a session"
	guardAlways   = "while wiggum's guard is set to always (--guard always)"
)

// worded is d as the agent reads it under p.
func (p *Policy) worded(d Decision) Decision {
	if p.NoSession && d.Action != Allow {
		d.Reason = strings.ReplaceAll(strings.ReplaceAll(d.Reason, inSession, guardAlways), inSessionRule, guardAlways)
	}
	return d
}

// dynamic stands for text only known at run time (an expansion).
const dynamic = "\x00"

// Check decides whether the shell command cmd may run under policy p.
func Check(cmd string, p Policy) Decision {
	if len(cmd) > MaxCommand {
		return Decision{Ask, fmt.Sprintf("the command is %d bytes long; wiggum's guard does not analyse commands over %d bytes", len(cmd), MaxCommand)}
	}
	g := &guard{p: p, best: Decision{Action: Allow}, left: newBudget()}
	g.script(cmd, 0)
	return p.worded(g.best)
}

// guard accumulates the strongest verdict over every command in a script.
type guard struct {
	p     Policy
	best  Decision
	left  budget
	files map[string]scriptRead // script files read, by absolute path
	// outer lists the directories the scripts being walked, this one and
	// those enclosing it, may run commands in: a script file that a nested
	// shell runs by a relative name is looked for in each.
	outer []string
	cfg   *gitSettings  // what the command gives git as settings (git_settings.go)
	disk  *[]gitSetting // the repository's and the person's git config, once read
	// lenient: judging a script that predates the session, whose own
	// unclear parts are not asked about (see Policy.Preexisting).
	lenient bool
}

func (g *guard) verdict(a Action, format string, args ...any) {
	if a == Ask && g.lenient {
		return
	}
	g.firm(a, format, args...)
}

// firm records a verdict that stands even in a lenient script: a clear
// denial, or an ask that comes from a script the agent may have written.
func (g *guard) firm(a Action, format string, args ...any) {
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
	if !g.spendParse(src) {
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		g.verdict(Ask, "wiggum's guard cannot parse this command (%v), so it cannot tell whether it is safe", err)
		return
	}
	w := &walk{g: g, file: f, depth: depth, pipeFrom: map[*syntax.Stmt]*syntax.Stmt{}, stmtOf: map[*syntax.CallExpr]*syntax.Stmt{}}
	w.dirs = w.cdTargets(f)
	saved := g.outer
	g.outer = append(slices.Clip(saved), w.dirs...)
	syntax.Walk(f, w.visit)
	g.outer = saved
}

// allowed reports whether args, a simple command's words, match one of the
// person's exceptions (Policy.Allow).
func (g *guard) allowed(args []string) bool {
	if len(g.p.Allow) == 0 {
		return false
	}
	line := strings.Join(args, " ")
	for _, pat := range g.p.Allow {
		if globMatch(pat, line) {
			return true
		}
	}
	return false
}

// globMatch reports whether s matches pattern, where ** is any run of
// characters, * any run within one word that does not cross a ':', and ?
// one character other than a space or a ':'. A refspec's ':' parts what a
// push sends from where it lands: 'git push origin feature/*' (install
// --help's example) let through git push origin feature/x:main, and
// feature/*:*, onto main; a pattern that means to allow a destination
// says so (feature/*:feature/*, or **). Dynamic programming over the
// pattern: linear in s for each of its characters, whatever the command
// holds.
func globMatch(pattern, s string) bool {
	// ok[j]: the pattern so far matches s[:j].
	ok := make([]bool, len(s)+1)
	ok[0] = true
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			i++
			for j := 1; j <= len(s); j++ {
				ok[j] = ok[j] || ok[j-1]
			}
		case c == '*':
			for j := 1; j <= len(s); j++ {
				ok[j] = ok[j] || ok[j-1] && s[j-1] != ' ' && s[j-1] != ':'
			}
		default:
			for j := len(s); j >= 1; j-- {
				ok[j] = ok[j-1] && (c == s[j-1] || c == '?' && s[j-1] != ' ' && s[j-1] != ':')
			}
			ok[0] = false
		}
	}
	return ok[len(s)]
}
