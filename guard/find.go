package guard

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A find that deletes what it matches (-delete, -exec rm) over a directory
// holding wiggum's state or .git is judged by what its tests can match:
// the guard puts sample names of what lives there (a checkpoint.json, a
// pack file, HEAD) through the expression, and denies when one gets
// through. `find . -name '*.orig' -delete` matches none of them;
// `find . -name '*.json' -delete` and `find . -type f -delete` do.

// stateSampleNames are the names wiggum's runtime directory holds: a
// pattern matching one can match state.
var stateSampleNames = []string{"checkpoint.json", "checkpoint.pending.json", "journal.jsonl", "run.json", "events.jsonl",
	"failures.jsonl", "progress.md", "hook-debug.log", "guard-unseen", "worktree.json"}

// gitSampleNames are names inside .git: its own files, a pack, a loose
// object and a ref.
var gitSampleNames = []string{"HEAD", "ORIG_HEAD", "FETCH_HEAD", "index", "config", "packed-refs", "description", "COMMIT_EDITMSG",
	"objects/pack/pack-0123abcd.pack", "objects/pack/pack-0123abcd.idx", "objects/pack/pack-0123abcd.rev",
	"objects/0a/123456789abcdef0123456789abcdef0123456", "refs/heads/main", "logs/HEAD"}

// findSample is one thing a find over the tree could delete.
type findSample struct {
	abs  string
	what string
}

// findSamples lists, as absolute paths, the samples of wiggum's state and
// of .git in the policy's working tree.
func (g *guard) findSamples() []findSample {
	if g.p.Root == "" {
		return nil
	}
	var out []findSample
	for _, sp := range g.p.StatePaths {
		rel := strings.Trim(sp, "/")
		abs := filepath.Join(g.p.Root, filepath.FromSlash(rel))
		out = append(out, findSample{abs, "wiggum's session state " + rel})
		if strings.HasSuffix(sp, "/") {
			for _, n := range stateSampleNames {
				out = append(out, findSample{filepath.Join(abs, n), "wiggum's session state " + rel + "/" + n})
			}
		}
	}
	git := filepath.Join(g.p.Root, ".git")
	out = append(out, findSample{git, "the repository's .git"})
	for _, n := range gitSampleNames {
		out = append(out, findSample{filepath.Join(git, filepath.FromSlash(n)), "the repository's .git (" + n + ")"})
	}
	return out
}

// findTest is one name or path test of a find expression.
type findTest struct {
	op, pat string
	not     bool
}

// findExpr is a find expression read as alternatives (split at -o and ,)
// of name and path tests; tests that do not look at names (-type,
// -newer, -empty) match anything. Parentheses are flattened, which can
// only make more alternatives, never fewer.
type findExpr struct {
	alts   [][]findTest
	pruned []findTest // the tests of alternatives ending in -prune
}

func parseFind(expr []string) findExpr {
	var e findExpr
	cur := []findTest{}
	prune := false
	not := false
	end := func() {
		if prune {
			e.pruned = append(e.pruned, cur...)
		} else {
			e.alts = append(e.alts, cur)
		}
		cur, prune, not = []findTest{}, false, false
	}
	for i := 0; i < len(expr); i++ {
		a := expr[i]
		switch a {
		case "-o", "-or", ",":
			end()
			continue
		case "!", "-not":
			not = !not
			continue
		case "-prune":
			prune = true
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname":
			if i+1 < len(expr) {
				cur = append(cur, findTest{op: a, pat: expr[i+1], not: not})
				i++
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			for i++; i < len(expr) && expr[i] != ";" && expr[i] != "+"; i++ {
			}
		}
		not = false
	}
	end()
	return e
}

// match reports whether t holds for the file at p (the path as find
// prints it). What cannot be told matches.
func (t findTest) match(p string) bool {
	name := path.Base(p)
	ci := strings.HasPrefix(t.op, "-i")
	pat := t.pat
	if ci {
		pat, name, p = strings.ToLower(pat), strings.ToLower(name), strings.ToLower(p)
	}
	if strings.Contains(pat, dynamic) {
		return true
	}
	switch strings.TrimPrefix(t.op, "-i") {
	case "name", "-name":
		ok, err := path.Match(pat, name)
		return ok || err != nil
	case "path", "-path", "wholename", "-wholename":
		return fnmatch(pat, p)
	case "regex", "-regex":
		re, err := regexp.Compile("^(?:" + pat + ")$")
		return err != nil || re.MatchString(p)
	}
	return false // -lname: no sample is a symbolic link
}

// reaches reports whether the expression can select the file at p: some
// alternative's tests all hold (a negated test holds when it does not
// match), and no pruned directory holds it.
func (e findExpr) reaches(p string) bool {
	// Each directory above p as find prints it (path.Dir would clean
	// "./.ralph" into ".ralph").
	for dir := p; ; {
		for _, t := range e.pruned {
			if !t.not && t.match(dir) {
				return false
			}
		}
		i := strings.LastIndexByte(dir, '/')
		if i <= 0 {
			break
		}
		dir = dir[:i]
	}
	for _, alt := range e.alts {
		ok := true
		for _, t := range alt {
			if t.match(p) == t.not {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// fnmatch is find's -path match: * and ? match / too. A bracket
// expression is taken to match.
func fnmatch(pat, s string) bool {
	if strings.Contains(pat, "[") {
		return true
	}
	// ok[j]: the pattern so far matches s[:j].
	ok := make([]bool, len(s)+1)
	ok[0] = true
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		if c == '\\' && i+1 < len(pat) {
			i++
			c = pat[i]
		} else if c == '*' {
			for j := 1; j <= len(s); j++ {
				ok[j] = ok[j] || ok[j-1]
			}
			continue
		} else if c == '?' {
			for j := len(s); j >= 1; j-- {
				ok[j] = ok[j-1]
			}
			ok[0] = false
			continue
		}
		for j := len(s); j >= 1; j-- {
			ok[j] = ok[j-1] && s[j-1] == c
		}
		ok[0] = false
	}
	return ok[len(s)]
}

// findDeletes denies a find that deletes what it matches (verb: -delete,
// -exec rm) when a start path holds wiggum's state or .git and the
// expression can match it.
func (w *walk) findDeletes(verb string, rest []string, filters ...lineFilter) {
	var starts []string
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if a == "-L" || a == "-P" || a == "-H" || a == "-O0" || a == "-O1" || a == "-O2" || a == "-O3" {
			continue
		}
		if strings.HasPrefix(a, "-") || a == "!" || a == "(" {
			break
		}
		starts = append(starts, a)
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	expr := parseFind(rest[i:])
	samples := w.g.findSamples()
	dirs := w.dirs
	if len(dirs) > 1 {
		dirs = dirs[1:] // the command changes directory first
	}
	for _, s := range starts {
		if strings.Contains(s, dynamic) {
			continue
		}
		for _, dir := range dirs {
			abs := w.g.resolve(dir, s)
			if abs == "" {
				continue
			}
			for _, smp := range samples {
				rel, err := filepath.Rel(abs, smp.abs)
				if err != nil || !filepath.IsLocal(rel) {
					continue
				}
				shown := strings.TrimSuffix(s, "/") + "/" + filepath.ToSlash(rel)
				if s == "/" {
					shown = "/" + filepath.ToSlash(rel)
				} else if rel == "." {
					shown = s
				}
				if expr.reaches(shown) && passes(filters, shown) {
					w.g.verdict(Deny, "find %s %s can match %s (%s): its tests do not keep it out; start it in the directories you mean, or exclude .ralph and .git (-path ./.ralph -prune -o ... / -not -path './.git/*')", printable(s), verb, smp.what, printable(shown))
					return
				}
			}
		}
	}
}

// lineFilter is a grep between a listing and xargs: whether a line
// passes it.
type lineFilter func(line string) bool

func passes(filters []lineFilter, line string) bool {
	for _, f := range filters {
		if !f(line) {
			return false
		}
	}
	return true
}

// parseGrep reads a grep's patterns and the options that change what
// passes (-v, -i, -F, -E, -x, -w; -e and -f patterns). It says not ok for
// what it cannot tell (a pattern file, an unknown pattern). A pattern Go
// cannot compile, or a word/line match, passes every line: it can let
// state through.
func parseGrep(args []string) (lineFilter, bool) {
	invert, fold, fixed, extended, whole := false, false, args[0] == "fgrep", args[0] == "egrep", false
	var pats []string
	explicit := false
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		switch {
		case a == "-e" || a == "--regexp":
			if i+1 < len(args) {
				pats = append(pats, args[i+1])
				i++
			}
			explicit = true
			continue
		case strings.HasPrefix(a, "--regexp="):
			pats, explicit = append(pats, strings.TrimPrefix(a, "--regexp=")), true
			continue
		case a == "-f" || strings.HasPrefix(a, "--file"):
			return nil, false
		case a == "--invert-match":
			invert = true
			continue
		case a == "--ignore-case":
			fold = true
			continue
		case a == "--fixed-strings":
			fixed = true
			continue
		case a == "--extended-regexp":
			extended = true
			continue
		case a == "--line-regexp" || a == "--word-regexp":
			whole = true
			continue
		case strings.HasPrefix(a, "--"):
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'v':
				invert = true
			case 'i':
				fold = true
			case 'F':
				fixed = true
			case 'E':
				extended = true
			case 'x', 'w':
				whole = true
			case 'e':
				pats, explicit = append(pats, a[j+1:]), true
				j = len(a)
			case 'f':
				return nil, false
			}
		}
	}
	if !explicit {
		if i >= len(args) {
			return nil, false
		}
		pats = append(pats, args[i])
	}
	var alts []string
	for _, p := range pats {
		if strings.Contains(p, dynamic) {
			return nil, false
		}
		for _, line := range strings.Split(p, "\n") {
			switch {
			case fixed:
				alts = append(alts, regexp.QuoteMeta(line))
			case extended:
				alts = append(alts, line)
			default:
				alts = append(alts, basicRegexp(line))
			}
		}
	}
	expr := "(?:" + strings.Join(alts, ")|(?:") + ")"
	if fold {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil || whole {
		// Not told: every line may pass either way.
		return func(string) bool { return true }, true
	}
	return func(line string) bool { return re.MatchString(line) != invert }, true
}

// basicRegexp turns a POSIX basic regular expression into Go's syntax:
// \( \) \| \{ \} \+ \? are its operators, ( ) | { } + ? literal.
func basicRegexp(bre string) string {
	var b strings.Builder
	for i := 0; i < len(bre); i++ {
		c := bre[i]
		if c == '\\' && i+1 < len(bre) {
			i++
			switch n := bre[i]; n {
			case '(', ')', '|', '{', '}', '+', '?':
				b.WriteByte(n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		}
		switch c {
		case '(', ')', '|', '{', '}', '+', '?':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// removesListing judges `LISTER | xargs rm`: a find listing is judged as
// find -delete would be, and a git ls-files listing of untracked or
// ignored files as git clean -f (ignored files are wiggum's state).
func (w *walk) removesListing(c *syntax.CallExpr, rm string) {
	st := w.stmtOf[c]
	if st == nil {
		return
	}
	from, ok := w.pipeFrom[st]
	if !ok {
		return
	}
	// Stages between the lister and xargs that filter its lines: greps
	// (grep -v .git may keep state out of the listing) and those that
	// pass every line on. Any other stage: not judged.
	var filters []lineFilter
	for {
		b, ok := from.Cmd.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			break
		}
		stage, ok := b.Y.Cmd.(*syntax.CallExpr)
		if !ok {
			return
		}
		sargs, _, _, ok := w.g.expandArgs(stage.Args)
		if !ok || len(sargs) == 0 {
			return
		}
		switch path.Base(sargs[0]) {
		case "grep", "egrep", "fgrep":
			f, ok := parseGrep(sargs)
			if !ok {
				return
			}
			filters = append(filters, f)
		case "sort", "uniq", "cat", "tee":
		default:
			return
		}
		from = b.X
	}
	lc, ok := from.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	args, _, _, ok := w.g.expandArgs(lc.Args)
	if !ok || len(args) == 0 {
		return
	}
	switch path.Base(args[0]) {
	case "find":
		w.findDeletes("| xargs "+rm, args[1:], filters...)
	case "git":
		if len(filters) > 0 {
			return // a grep may keep what matters out
		}
		i, _, _ := w.gitGlobals(args[1:])
		rest := args[1+i:]
		if len(rest) == 0 || rest[0] != "ls-files" {
			return
		}
		w.lsFilesRemoved(rm, rest[1:])
	}
}

// lsFilesRemoved denies removing what git ls-files lists of untracked
// (-o) or ignored (-i) files with no pathspec to narrow it.
func (w *walk) lsFilesRemoved(rm string, rest []string) {
	others, ignored := false, false
	opts, paths := splitDashDash(rest)
	for _, a := range opts {
		switch {
		case a == "--others":
			others = true
		case a == "--ignored":
			ignored = true
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			others = others || strings.ContainsRune(a, 'o')
			ignored = ignored || strings.ContainsRune(a, 'i')
		case !strings.HasPrefix(a, "-"):
			paths = append(paths, a)
		}
	}
	if !others && !ignored {
		return
	}
	for _, p := range paths {
		if !w.wholeTree(p) {
			return
		}
	}
	if ignored {
		w.g.verdict(Deny, "git ls-files --ignored | xargs %s deletes ignored files, wiggum's session state (agent lock, checkpoint) among them; delete the specific files you mean", rm)
		return
	}
	w.g.verdict(Deny, "git ls-files --others | xargs %s deletes every untracked file, as git clean -f does (wiggum's backups cannot save them afterwards); delete the specific files you created", rm)
}
