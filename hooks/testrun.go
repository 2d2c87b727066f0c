package hooks

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/wiggum-dev/wiggum/guard"
)

// TestRunner names the test runner a shell command starts ("go test",
// "pytest", "npm test", ...), or "" when it runs no tests.
func TestRunner(command string) string {
	runner, _, _ := testRunIn(command)
	return runner
}

// testRunIn is TestRunner with the directory the run is in, relative to
// the shell's (absolute when the command says so; "" for the shell's
// own), from the cd's before it in its shell (not those of a subshell or
// command substitution that ended) and the runner's own directory option
// (go -C, npm --prefix, make -C ...). known is false when a word of these
// is not plain text (cd "$DIR", cd -, a bare cd): the test hook then takes
// the run for one in the tree, as it did before it asked.
func testRunIn(command string) (runner, dir string, known bool) {
	if len(command) > guard.MaxCommand {
		return "", "", false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		// Half a command is still worth a look: a failing run must not
		// slip through because of an odd quote elsewhere.
		runner, args := runnerOf(strings.Fields(command))
		return runner, runnerDir(args), false
	}
	type place struct {
		dir   string
		known bool
	}
	cur := place{"", true}
	var nodes []syntax.Node // the walk's path from the top
	var saved []place       // cur on entering each scope on that path
	scope := func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.Subshell, *syntax.CmdSubst, *syntax.ProcSubst, *syntax.FuncDecl:
			return true
		}
		return false
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if runner != "" {
			return false
		}
		if n == nil {
			if top := nodes[len(nodes)-1]; scope(top) {
				cur, saved = saved[len(saved)-1], saved[:len(saved)-1]
			}
			nodes = nodes[:len(nodes)-1]
			return true
		}
		nodes = append(nodes, n)
		if scope(n) {
			saved = append(saved, cur)
		}
		c, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		args := make([]string, 0, len(c.Args))
		lit := true
		for _, a := range c.Args {
			s, ok := guard.WordValue(a)
			lit = lit && ok
			args = append(args, s)
		}
		if len(args) > 0 && (args[0] == "cd" || args[0] == "pushd" || args[0] == "popd") {
			target := ""
			for _, a := range args[1:] {
				if a == "--" || (strings.HasPrefix(a, "-") && a != "-") {
					continue
				}
				target = a
				break
			}
			if !lit || target == "" || target == "-" || args[0] == "popd" || strings.HasPrefix(target, "~") {
				cur.known = false
			} else {
				cur.dir = joinDir(cur.dir, target)
			}
			return true
		}
		var args2 []string
		runner, args2 = runnerOf(args)
		if runner != "" {
			d := runnerDir(args2)
			dir, known = joinDir(cur.dir, d), cur.known && lit
			return false
		}
		if len(args) > 2 && guard.IsShell(path.Base(args[0])) {
			for i, a := range args[1 : len(args)-1] {
				if strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'c') {
					var d string
					var k bool
					if runner, d, k = testRunIn(args[i+2]); runner != "" {
						dir, known = joinDir(cur.dir, d), cur.known && lit && k
					}
					break
				}
			}
		}
		return runner == ""
	})
	return runner, dir, known
}

// joinDir is dir after a cd to next from it ("" stays where it is).
func joinDir(dir, next string) string {
	switch {
	case next == "":
		return dir
	case path.IsAbs(next) || dir == "":
		return path.Clean(next)
	}
	return path.Join(dir, next)
}

// dirOptions are the options that name the directory a runner works in:
// go -C sub test, make -C sub test, cargo -C sub test, gradle -p sub test.
// (The package managers' are guard.PackageDir's.)
func dirOptions(base string) string {
	switch base {
	case "go", "cargo", "ninja":
		return " -C "
	case "make", "gmake":
		return " -C --directory "
	case "just":
		return " -d --working-directory "
	case "gradle", "gradlew":
		return " -p --project-dir "
	case "ctest":
		return " --test-dir "
	}
	return ""
}

// hasOption reports whether opts (dirOptions', valueOptions' answer)
// names the option a. Strings and switches, not maps built at start-up,
// which every hook call would pay for.
func hasOption(opts, a string) bool {
	return opts != "" && a != "" && !strings.Contains(a, " ") && strings.Contains(opts, " "+a+" ")
}

// runnerDir is the directory option of a test runner's argv (from
// runnerOf), "" when it has none.
func runnerDir(args []string) string {
	if len(args) == 0 {
		return ""
	}
	base := path.Base(args[0])
	rest := args[1:]
	if packageManagers[base] {
		return guard.PackageDir(base, rest)
	}
	opts := dirOptions(base)
	if opts == "" {
		return ""
	}
	dir := ""
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		key, v, eq := strings.Cut(a, "=")
		switch {
		case hasOption(opts, a) && i+1 < len(rest):
			i++
			dir = joinDir(dir, rest[i]) // make -C a -C b is a/b
		case eq && hasOption(opts, key) && strings.HasPrefix(key, "--"):
			dir = joinDir(dir, v)
		case len(a) > 2 && hasOption(opts, a[:2]) && !strings.HasPrefix(a, "--"):
			dir = joinDir(dir, a[2:]) // make -Csub
		}
	}
	return dir
}

// valueOptions are the options a tool takes before its subcommand (or
// its run's command) whose value is the next argument: go -C sub test,
// cargo --manifest-path x/Cargo.toml test, uv run --directory sub pytest.
// Read as the subcommand, the value hid the test run.
func valueOptions(base string) string {
	switch base {
	case "go":
		return " -C "
	case "cargo":
		return " -C --manifest-path --config -Z --color "
	case "bun":
		return " --cwd --config -c "
	case "npm":
		return " --loglevel --userconfig --cache "
	case "pnpm":
		return " --loglevel --reporter "
	case "poetry":
		return " -C --directory -P --project "
	case "uv":
		return " --directory --project -p --python --with --package --config-file --env-file --index --extra --group "
	case "hatch":
		return " -e --env "
	case "pdm":
		return " -p --project "
	case "dotnet":
		return " --project "
	}
	return ""
}

// packageManagers read their workspace and directory options through
// guard.PackageCommand.
var packageManagers = map[string]bool{"npm": true, "pnpm": true, "yarn": true, "bun": true}

// skipOptions drops the options that lead args (base's, after its name),
// with the values of base's valueOptions, and a cargo +toolchain: what
// is left starts with the subcommand.
func skipOptions(base string, args []string) []string {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return args[1:]
		case base == "cargo" && strings.HasPrefix(a, "+"):
			args = args[1:]
		case !strings.HasPrefix(a, "-") || a == "-":
			return args
		case hasOption(valueOptions(base), a) && len(args) > 1:
			args = args[2:]
		default:
			args = args[1:]
		}
	}
	return args
}

// runnerOf recognises a test runner in one argv, looking through
// wrappers, with the argv left once they are (the runner's own).
func runnerOf(args []string) (string, []string) {
	for len(args) > 0 {
		base := path.Base(args[0])
		switch base {
		case "env", "timeout", "nice", "nohup", "time", "stdbuf", "xvfb-run", "sudo", "command", "exec", "npx", "bunx", "dotenv":
			i := 1
			for i < len(args) && (strings.HasPrefix(args[i], "-") || strings.Contains(args[i], "=") || (base == "timeout" && i == 1)) {
				i++
			}
			args = args[i:]
			continue
		case "bundle", "poetry", "pipenv", "uv", "hatch", "pdm", "rye":
			// bundle exec rspec, poetry run pytest, uv run pytest,
			// poetry -C sub run pytest, uv run --directory sub pytest
			rest := skipOptions(base, args[1:])
			if len(rest) > 1 && (rest[0] == "exec" || rest[0] == "run") {
				args = skipOptions(base, rest[1:])
				continue
			}
			if base == "hatch" && len(rest) > 0 && rest[0] == "test" {
				return "hatch test", args
			}
			return "", args
		}
		break
	}
	if len(args) == 0 {
		return "", args
	}
	base := path.Base(args[0])
	rest := args[1:]
	if packageManagers[base] {
		rest = guard.PackageCommand(base, rest)
	}
	sub := ""
	if r := skipOptions(base, rest); len(r) > 0 {
		sub = r[0]
	}
	switch base {
	case "pytest", "py.test", "jest", "vitest", "mocha", "rspec", "bats", "tox", "nox", "phpunit", "ctest", "gotestsum", "ava", "tap", "karma", "cucumber", "behave", "nosetests", "trial", "prove", "busted":
		return base, args
	case "go", "cargo", "swift", "deno", "bun", "dotnet", "mix", "zig", "stack", "cabal", "lein", "sbt", "dart", "flutter", "bazel", "bazelisk", "playwright":
		if sub == "test" || sub == "nextest" || (base == "zig" && strings.Contains(strings.Join(args, " "), "build test")) {
			return base + " test", args
		}
		if base == "bun" {
			return scriptRun(base, rest, sub), args
		}
	case "node", "nodejs":
		// Node's own runner (Node 18+), the test run of a project with
		// no framework and of one file: node --test test/x.test.js.
		for _, a := range rest {
			if a == "--test" || a == "--test-only" {
				return "node --test", args
			}
		}
	case "turbo":
		// turbo run test, turbo test, turbo run lint test
		if sub == "test" || strings.HasPrefix(sub, "test:") {
			return "turbo test", args
		}
		if sub == "run" {
			for _, a := range skipOptions(base, rest)[1:] {
				if !strings.HasPrefix(a, "-") && (strings.Contains(a, "test") || strings.Contains(a, "spec")) {
					return "turbo run " + a, args
				}
			}
		}
	case "nx":
		// nx test app, nx run app:test, nx affected -t test,
		// nx run-many --target=test
		if sub == "test" || sub == "e2e" {
			return "nx " + sub, args
		}
		for i, a := range rest {
			v, named := "", false
			switch {
			case a == "-t" || a == "--target" || a == "--targets":
				if i+1 < len(rest) {
					v, named = rest[i+1], true
				}
			case strings.HasPrefix(a, "--target=") || strings.HasPrefix(a, "--targets="):
				_, v, _ = strings.Cut(a, "=")
				named = true
			case sub == "run" && strings.Contains(a, ":"):
				_, v, _ = strings.Cut(a, ":")
				named = true
			}
			if named && (strings.Contains(v, "test") || strings.Contains(v, "e2e")) {
				return "nx " + v, args
			}
		}
	case "python", "python3", "python2":
		for i, a := range args {
			if a == "-m" && i+1 < len(args) {
				switch args[i+1] {
				case "pytest", "unittest", "nose", "tox":
					return "python -m " + args[i+1], args
				}
			}
		}
	case "npm", "yarn", "pnpm":
		if sub == "test" || sub == "t" || strings.HasPrefix(sub, "test:") {
			return base + " test", args
		}
		return scriptRun(base, rest, sub), args
	case "make", "gmake", "just", "task", "mage", "rake", "ninja":
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
				continue
			}
			if a == "check" || strings.Contains(a, "test") || strings.Contains(a, "spec") {
				return base + " " + a, args
			}
		}
	case "mvn", "mvnw", "gradle", "gradlew":
		for _, a := range args[1:] {
			if a == "test" || a == "check" || a == "verify" {
				return base + " " + a, args
			}
		}
	}
	return "", args
}

// scriptRun recognises a package manager's run of a test script (npm run
// test:unit, bun run test) and of a package's binary: npm exec, pnpm exec,
// pnpm dlx, bunx-like forms, and yarn's and pnpm's bare pnpm vitest, which
// run a binary as npx does.
func scriptRun(base string, rest []string, sub string) string {
	r := skipOptions(base, rest)
	// The binary it runs, by name: the directory options that count are
	// the package manager's, in the caller's argv.
	runner := func(args []string) string {
		name, _ := runnerOf(args)
		return name
	}
	switch sub {
	case "":
		return ""
	case "run", "run-script":
		for _, a := range r[1:] {
			if !strings.HasPrefix(a, "-") {
				if strings.Contains(a, "test") || strings.Contains(a, "spec") {
					return base + " run " + a
				}
				break
			}
		}
		if base != "bun" {
			return ""
		}
		// bun run also runs a file or a binary: bun run vitest.
		return runner(skipOptions(base, r[1:]))
	case "exec", "dlx", "x":
		return runner(skipOptions(base, r[1:]))
	}
	if base == "yarn" || base == "pnpm" {
		return runner(r)
	}
	return ""
}

// Outcome is what a test run's output says about it.
type Outcome int

// Test run outcomes.
const (
	Unknown Outcome = iota
	Passed
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// signal is one line format of a runner's summary. A line is only matched
// against re when it starts (after indentation, if indented is set) with one
// of the prefixes ("#" stands for a digit): the hook reads thousands of lines
// per call and must stay cheap.
type signal struct {
	prefixes []string
	indented bool
	word     string // when set, the line must contain it
	re       *lazyRE
	except   *lazyRE // when set, a line it matches is not the signal
}

func sig(indented bool, re string, prefixes ...string) signal {
	return signal{prefixes: prefixes, indented: indented, re: lazy(re)}
}

// lazyRE compiles on first use: a hook process lives for one event and
// compiling every pattern up front would cost more than the event itself.
type lazyRE struct {
	once sync.Once
	src  string
	re   *regexp.Regexp
}

func lazy(src string) *lazyRE { return &lazyRE{src: src} }

func (l *lazyRE) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

// MatchString reports whether s matches.
func (l *lazyRE) MatchString(s string) bool { return l.get().MatchString(s) }

// unless sets what makes a matching line not the signal after all.
func (s signal) unless(re string) signal {
	s.except = lazy(re)
	return s
}

// with adds a word the line must contain before the regexp is tried.
func (s signal) with(word string) signal {
	s.word = word
	return s
}

// Runner summaries. Each is anchored to a whole line in the runner's own
// format, so a passing test that merely prints "FAIL" or "failed" does not
// count; output piped through tee still carries them. Built on first use,
// not at the start of every wiggum process: a PreToolUse hook reads no
// test output.
var runnerSignals = sync.OnceValue(func() *signalSet {
	fail := []signal{
		sig(false, `^--- FAIL: `, "--- FAIL"),                                                          // go test
		sig(false, `^FAIL\s*$|^FAIL\t\S+`, "FAIL"),                                                     // go test package line
		sig(false, `^panic: .*\[recovered\]|^panic: test timed out`, "panic:"),                         // go test binary crash
		sig(false, `^(=+ )?(\d+ passed, )?\d+ (failed|errors?)\b.* in [\d.]+s`, "=", "#").with(" in "), // pytest summary
		sig(false, `^FAILED \S+::`, "FAILED"),                                                          // pytest short summary
		sig(false, `^Tests:\s+(.*, )?\d+ failed`, "Tests:"),                                            // jest
		sig(false, `^Test Suites:\s+\d+ failed`, "Test Suites:"),                                       // jest
		sig(true, `^(Tests|Test Files)\s+\d+ failed`, "Test"),                                          // vitest
		sig(false, `^test result: FAILED\.`, "test result:"),                                           // cargo test
		sig(false, `^\d+ examples?, [1-9]\d* failures?`, "#").with(" example"),                         // rspec
		sig(false, `^not ok \d+`, "not ok").unless(`#\s*(?i:todo|skip)\b`),                             // bats, TAP; a TODO or SKIP directive is no failure
		sig(false, `^(npm ERR!|npm error) (Test failed|code ELIFECYCLE)`, "npm"),                       // npm test
		sig(false, `^error Command failed with exit code \d+`, "error Command"),                        // yarn
		sig(true, `^ELIFECYCLE\s+Test failed`, "ELIFECYCLE"),                                           // pnpm
		sig(false, `^make(\[\d+\])?: \*\*\* \[[^\]]*\] Error \d+`, "make"),                             // make test
		sig(false, `^FAILED \(.*(failures|errors)=\d+`, "FAILED"),                                      // python -m unittest
		sig(false, `^error: test failed`, "error: test"),                                               // cargo
	}
	pass := []signal{
		sig(false, `^ok\s+\S+\s+([\d.]+s|\(cached\))`, "ok"),                     // go test
		sig(false, `^PASS\s*$`, "PASS"),                                          // go test -v
		sig(false, `^(=+ )?\d+ passed\b.* in [\d.]+s`, "=", "#").with(" passed"), // pytest
		sig(false, `^Tests:\s+\d+ passed`, "Tests:"),                             // jest
		sig(true, `^(Tests|Test Files)\s+\d+ passed`, "Test"),                    // vitest
		sig(true, `^\d+ passing \(`, "#"),                                        // mocha
		sig(false, `^test result: ok\.`, "test result:"),                         // cargo test
		sig(false, `^\d+ examples?, 0 failures`, "#").with(" example"),           // rspec
		sig(false, `^ok \d+`, "ok"),                                              // bats, TAP
		sig(false, `^OK( \(.*\))?\s*$`, "OK"),                                    // python -m unittest
		sig(false, `^Ran \d+ tests? in`, "Ran "),                                 // python -m unittest
		sig(false, `^100% tests passed, 0 tests failed`, "100%"),                 // ctest
		sig(false, `^Tests run: \d+, Failures: 0, Errors: 0`, "Tests run:"),      // maven surefire
	}
	// failIdx and passIdx list, per first byte of a line, the signals
	// that can match it.
	return &signalSet{fail: fail, pass: pass, failIdx: index(fail), passIdx: index(pass)}
})

// signalSet is the runners' summaries, failing and passing, indexed.
type signalSet struct {
	fail, pass       []signal
	failIdx, passIdx *[256][]int
}

var (
	mochaSummary = lazy(`^\d+ (passing \(|pending\s*$)`)
	mochaFailing = lazy(`^\d+ failing\s*$`)
	ansi         = lazy(`\x1b\[[0-9;?]*[A-Za-z]`)
)

func index(sigs []signal) *[256][]int {
	var idx [256][]int
	for i, s := range sigs {
		for _, p := range s.prefixes {
			if p == "#" {
				for b := '0'; b <= '9'; b++ {
					idx[b] = append(idx[b], i)
				}
				continue
			}
			idx[p[0]] = append(idx[p[0]], i)
		}
	}
	return &idx
}

func (s *signal) match(line, trimmed string) bool {
	if !s.indented && len(trimmed) != len(line) {
		return false
	}
	if s.word != "" && !strings.Contains(trimmed, s.word) {
		return false
	}
	for _, p := range s.prefixes {
		if p == "#" {
			if trimmed != "" && trimmed[0] >= '0' && trimmed[0] <= '9' {
				return s.matches(trimmed)
			}
			continue
		}
		if strings.HasPrefix(trimmed, p) {
			return s.matches(trimmed)
		}
	}
	return false
}

func (s *signal) matches(trimmed string) bool {
	return s.re.MatchString(trimmed) && (s.except == nil || !s.except.MatchString(trimmed))
}

// Classify reads a test run's output (stdout and stderr interleaved) and its
// exit code (-1 when the agent does not report one).
func Classify(output string, exitCode int) Outcome {
	if exitCode > 0 {
		return Failed
	}
	pass := false
	sigs := runnerSignals()
	// mocha prints "N failing" right after "N passing (time)" (and
	// "N pending"); only there is it the runner's summary.
	afterMocha, afterNodePass := false, false
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, "\r\n")
		if strings.IndexByte(line, 0x1b) >= 0 {
			line = ansi.get().ReplaceAllString(line, "")
		}
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" {
			continue
		}
		for _, i := range sigs.failIdx[trimmed[0]] {
			if sigs.fail[i].match(line, trimmed) {
				return Failed
			}
		}
		digit := trimmed[0] >= '0' && trimmed[0] <= '9'
		if afterMocha && digit && mochaFailing.MatchString(trimmed) {
			return Failed
		}
		afterMocha = digit && mochaSummary.MatchString(trimmed)
		// Node's test runner closes with its counts, "# pass N" then
		// "# fail N" (TAP) or "ℹ pass N" then "ℹ fail N" (its spec
		// reporter, which prints no "not ok" line at all). Only right
		// after the pass count is a fail count the summary - a test
		// may print "# fail 1" - and it survives the | tail -N that cut
		// the "not ok" lines.
		if word, n, ok := nodeCount(line); ok && word == "fail" && afterNodePass {
			if n > 0 {
				return Failed
			}
			pass = true
		} else {
			afterNodePass = ok && word == "pass"
		}
		if !pass {
			for _, i := range sigs.passIdx[trimmed[0]] {
				if sigs.pass[i].match(line, trimmed) {
					pass = true
					break
				}
			}
		}
	}
	if pass || exitCode == 0 {
		return Passed
	}
	return Unknown
}

// nodeCount reads one of the counts that close a run of Node's test
// runner: "# fail 1" (TAP) or "ℹ fail 1" (spec), unindented, nothing after
// the number.
func nodeCount(line string) (word string, n int, ok bool) {
	rest, found := strings.CutPrefix(line, "# ")
	if !found {
		if rest, found = strings.CutPrefix(line, "ℹ "); !found {
			return "", 0, false
		}
	}
	word, num, found := strings.Cut(rest, " ")
	if !found || (word != "pass" && word != "fail") {
		return "", 0, false
	}
	n, err := strconv.Atoi(strings.TrimRight(num, " "))
	if err != nil || n < 0 || num == "" || num[0] < '0' || num[0] > '9' {
		return "", 0, false
	}
	return word, n, true
}

// Tail returns the last n lines of s, at most max bytes, for failure logs
// and prompts.
func Tail(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	lines := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			lines++
			if lines == n {
				s = s[i+1:]
				break
			}
		}
	}
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return s
}
