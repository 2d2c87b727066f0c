package hooks

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// GitShimName is the name the wiggum binary answers to as the git shim: a
// link called git in a directory the run puts first on the agent's PATH.
const GitShimName = "git"

// NoPushHelperName is the name the wiggum binary answers to as the remote
// helper every push of a session's agent is sent to (git.NoPush): a link
// beside the shim.
const NoPushHelperName = "git-remote-" + gitfiles.NoPushTransport

// NoPushHelper is git-remote-wiggum-no-push: git runs it for a push the
// session's git settings sent its way, one that went round both the shim
// and git's hooks (git by its full path, --no-verify). It refuses.
func NoPushHelper(args []string, stderr io.Writer) int {
	url := ""
	if len(args) >= 2 {
		url = " to " + strings.TrimPrefix(args[1], gitfiles.NoPushTransport+"::")
	}
	fmt.Fprintf(stderr, "wiggum: push%s refused: a wiggum session holds this repository, and an agent must not publish work "+
		"(this push ran git by its full path, round wiggum's git and its hooks); push after the session ends\n", url)
	return 1
}

// A push the guard could not read - from a script, a test, a package
// script - is stopped by wiggum's pre-push hook, but not when git runs no
// hooks: `git push --no-verify`, `git send-pack`, and every git in Gemini
// CLI's shell, which empties core.hooksPath. As the agent's git (the run
// puts the shim first on its PATH), wiggum asks the same question as the
// pre-push hook before a push, whatever git's hooks are set to, and
// otherwise hands over to the real git at once (exec: same process, same
// streams and exit code).

// GitShim runs `git ARGS` as the agent's git: it refuses a push the
// session forbids, and execs the real git otherwise. It returns only when
// it cannot exec (the exit code to use).
func GitShim(args []string, stderr io.Writer) int {
	real := gitfiles.RealGit()
	if real == "" {
		fmt.Fprintln(stderr, "wiggum: no git on PATH besides wiggum's shim")
		return 127
	}
	dir, sub, inline := gitCommand(args)
	if gitPush(dir, args, sub, inline, real) {
		if err := GitHook(context.Background(), dir, "pre-push"); err != nil {
			fmt.Fprintf(stderr, "wiggum: %v\n", err)
			return 1
		}
		if noPushSet() {
			// Not the session's repository (a submodule of it, another
			// one), so no session there - but the session sends every
			// push of its agent to the no-push helper, whose refusal
			// would say the agent went round this shim. Refused here,
			// saying what it is.
			fmt.Fprintf(stderr, "wiggum: push from %s refused: it runs inside a wiggum session, and an agent must not publish work from any repository (a submodule too); push after the session ends\n", dir)
			return 1
		}
	}
	if shared := os.Getenv(layout.SharedStashEnv); shared != "" && sub < len(args) && args[sub] == "stash" {
		var code int
		if args, code, _ = ownStash(dir, shared, args, sub, real, stderr); code >= 0 {
			return code
		}
	}
	if target := os.Getenv(layout.TargetBranchEnv); target != "" && sub < len(args) && switchesTo(args[sub+1:], args[sub], target) {
		if code := stayOnOwnBranch(dir, os.Getenv(layout.SharedStashEnv), target, stderr); code >= 0 {
			return code
		}
	}
	if sub < len(args) && args[sub] == "worktree" {
		if code := keepLeased(dir, args[sub+1:], real, stderr); code >= 0 {
			return code
		}
	}
	if sub < len(args) && args[sub] == "clean" {
		args = cleanKeepsState(args, sub)
	}
	if sub < len(args) && journaledCommand(args[sub]) {
		if code, ran := commitJournaled(dir, args, sub, inline, real, stderr); ran {
			return code
		}
	}
	err := syscall.Exec(real, append([]string{"git"}, args...), os.Environ())
	fmt.Fprintf(stderr, "wiggum: run %s: %v\n", real, err)
	return 126
}

// noPushSet reports whether the session's git setting that sends every
// push to the no-push helper (git.NoPush, given through GIT_CONFIG_*) is
// in this process's environment.
func noPushSet() bool {
	key := gitfiles.NoPush[0][0]
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "GIT_CONFIG_KEY_") && v == key {
			return true
		}
	}
	return false
}

// gitCommand reads git ARGS's options before its command: the directory
// it works in, the index of the command in args (len(args) when there is
// none), and its -c settings.
func gitCommand(args []string) (dir string, sub int, inline []string) {
	dir, _ = os.Getwd()
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		takes := func(name string) (string, bool) {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v, true
			}
			if a == name && i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		if a == "-C" && i+1 < len(args) {
			i++
			if filepath.IsAbs(args[i]) {
				dir = args[i]
			} else {
				dir = filepath.Join(dir, args[i])
			}
			continue
		}
		if a == "-c" && i+1 < len(args) {
			i++
			inline = append(inline, args[i])
			continue
		}
		if v, ok := takes("--work-tree"); ok {
			dir = v
			continue
		}
		if v, ok := takes("--git-dir"); ok {
			dir = filepath.Dir(strings.TrimSuffix(v, "/"))
			continue
		}
		_, _ = takes("--namespace") // its value is no subcommand
	}
	return dir, i, inline
}

// gitPush reports whether git ARGS, whose command is args[i], pushes
// (push, send-pack, or an alias for them).
func gitPush(dir string, args []string, i int, inline []string, real string) bool {
	if i >= len(args) {
		return false
	}
	sub := args[i]
	if sub == "push" || sub == "send-pack" {
		return true
	}
	if isBuiltinGit(sub) {
		return false
	}
	// An alias: given inline, or in git's config (asked of the real git,
	// only for a command git does not have).
	alias := ""
	for _, kv := range inline {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, "alias."+sub) {
			alias = v
		}
	}
	if alias == "" {
		out, err := exec.Command(real, "-C", dir, "config", "--get", "alias."+sub).Output()
		if err != nil {
			return false
		}
		alias = strings.TrimSpace(string(out))
	}
	f := strings.Fields(alias)
	return len(f) > 0 && (f[0] == "push" || f[0] == "send-pack")
}

// builtinGit are git's commands an alias cannot shadow (git runs its own
// command over an alias of the same name), listed so that most git calls
// ask nothing more. (A constant, not a map: a hook's start builds none.)
const builtinGit = ` add am annotate apply archive bisect blame branch bundle cat-file check-attr
	check-ignore check-ref-format checkout checkout-index cherry cherry-pick clean clone commit commit-graph
	commit-tree config count-objects describe diff diff-files diff-index diff-tree difftool fetch fetch-pack
	for-each-ref format-patch fsck gc grep hash-object help index-pack init log ls-files ls-remote ls-tree
	merge merge-base merge-file mktag mktree mv name-rev notes pack-objects pack-refs prune pull range-diff
	read-tree rebase reflog remote repack replace rerere reset restore rev-list rev-parse revert rm shortlog
	show show-branch show-ref sparse-checkout stash status submodule switch symbolic-ref tag update-index
	update-ref var verify-commit verify-pack verify-tag version worktree write-tree maintenance
	hook interpret-trailers column credential mailinfo mailsplit stripspace whatchanged `

func isBuiltinGit(sub string) bool { return slices.Contains(strings.Fields(builtinGit), sub) }

// cleanKeepsState adds to git clean ARGS (its command at args[sub]) the
// rule that keeps the state directory (.ralph/): an agent's git clean -fdx
// - "start from a clean tree" - deleted wiggum's lock (another run could
// then take the tree), the attempt's checkpoint (its rollback refused:
// "no checkpoint recorded", the run stopped) and the journal, and in a
// parallel worktree the worker's lease, which a pruner could then take
// while the worker lived. With -x git clean drops the ignore rules but
// keeps those given with -e, so the directory, named there, stays; with
// -X it removes only what the rules ignore, so the directory is named
// un-ignored. The rest of the clean is the agent's as it asked.
func cleanKeepsState(args []string, sub int) []string {
	rule := "/" + layout.StateDir + "/"
	for _, a := range beforeDashDash(args[sub+1:]) {
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'X') {
			rule = "!/" + layout.StateDir + "/**"
		}
	}
	return slices.Concat(args[:sub+1], []string{"-e", rule}, args[sub+1:])
}

// beforeDashDash is args up to a "--".
func beforeDashDash(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
}
