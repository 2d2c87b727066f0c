package guard

import (
	"strings"
)

// git checks one git invocation (the arguments after "git"). The rules for
// each subcommand live in git_SUBCOMMAND.go.
func (w *walk) git(args []string) {
	i, otherDir, inline := w.gitGlobals(args)
	if i >= len(args) || gitHelp(args[:i]) {
		return
	}
	sub, rest := args[i], args[i+1:]
	if gitHelp(beforeDashDash(rest)) || (len(rest) == 1 && rest[0] == "-h") {
		return // git shows the manual or the usage and runs nothing
	}
	if strings.Contains(sub, dynamic) {
		w.g.verdict(Ask, "the git subcommand is only known at run time, so wiggum's guard cannot tell what it does")
		return
	}
	if !gitCommand(sub) {
		w.gitAliasCall(sub, inline, rest)
	}
	switch sub {
	case "push", "send-pack", "http-push":
		w.gitPush(sub, rest)
	case "merge", "pull":
		w.gitMerge(sub, rest, otherDir)
	case "reset":
		w.gitReset(rest)
	case "read-tree":
		w.gitReadTree(rest)
	case "fetch":
		w.gitFetch(rest)
	case "subtree":
		w.gitSubtree(rest)
	case "clean":
		w.gitClean(rest, inline)
	case "checkout":
		w.gitCheckout(rest)
	case "restore":
		w.gitRestore(rest)
	case "switch":
		w.gitSwitch(rest)
	case "branch":
		w.gitBranch(rest)
	case "update-ref":
		w.gitUpdateRef(rest)
	case "fast-import":
		w.gitFastImport()
	case "replace":
		w.gitReplace(rest)
	case "commit":
		w.gitCommit(rest)
	case "filter-branch", "filter-repo":
		w.gitRewrite(sub)
	case "reflog":
		w.gitReflog(rest)
	case "gc", "prune":
		w.gitPrune(sub, rest)
	case "stash":
		w.gitStash(rest)
	case "rm":
		w.gitRm(rest)
	case "remote":
		w.gitRemote(rest)
	case "config":
		w.gitConfig(rest)
	case "submodule":
		w.gitSubmodule(rest)
	case "bisect", "rebase":
		w.gitRunsCode(sub, rest)
	case "worktree":
		w.gitWorktree(rest)
	}
	w.gitLands(sub, rest, otherDir)
	if writesRefs(sub) {
		w.gitOwnRefs(sub, rest)
	}
}

// gitValueOpts are git's global options that take a separate value.
func gitValueOpt(name string) bool {
	switch name {
	case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds":
		return true
	}
	return false
}

// gitGlobals checks git's global options and returns the index of the
// subcommand, whether git runs in a tree other than the policy's, and the
// settings given with -c.
func (w *walk) gitGlobals(args []string) (int, bool, []gitSetting) {
	otherDir := false
	var inline []gitSetting
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		if gitValueOpt(name) && !hasValue && i+1 < len(args) {
			value = args[i+1]
			i++
		}
		switch name {
		case "-C", "--git-dir", "--work-tree":
			if !w.sameTree(value) {
				otherDir = true
			}
		case "-c", "--config-env":
			inline = append(inline, w.gitInlineConfig(value))
		}
	}
	return i, otherDir, inline
}

// sameTree reports whether git -C DIR stays in the working tree the guard
// knows about.
func (w *walk) sameTree(dir string) bool {
	if w.g.p.Root == "" {
		return false
	}
	abs := w.g.resolve(w.g.p.Cwd, dir)
	if abs == "" {
		return false
	}
	rel := strings.TrimPrefix(abs, w.g.p.Root)
	return abs == w.g.p.Root || (len(rel) < len(abs) && strings.HasPrefix(rel, "/"))
}

func beforeDashDash(args []string) []string {
	opts, _ := splitDashDash(args)
	return opts
}

// splitDashDash splits args at "--"; paths is nil when there is none.
func splitDashDash(args []string) (opts, paths []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], append([]string{}, args[i+1:]...)
		}
	}
	return args, nil
}

// gitHelp reports whether git's arguments ask for help.
func gitHelp(args []string) bool {
	for _, a := range args {
		if a == "--help" {
			return true
		}
	}
	return false
}

// longOpt reports whether a is the long option full or an abbreviation of
// it git accepts (git takes any unambiguous prefix: --har is --hard);
// least is the shortest prefix that is unambiguous for the subcommand.
func longOpt(a, full string, least int) bool {
	name, _, _ := strings.Cut(a, "=")
	return len(name) >= least && strings.HasPrefix(full, name)
}

// shortFlag reports whether a is a cluster of short options (-fdx)
// holding any of the letters.
func shortFlag(a, letters string) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], letters)
}

// gitCommands are the commands git ships (git 2.39's --list-cmds=main),
// each between spaces: no alias can take their names. A newer git's
// commands are looked up as aliases, which finds none. A string (each
// name after a space, before a space or a line's end), not a map built at
// start-up: every hook call would pay for building it.
const gitCommands = ` add add--interactive am annotate apply archive bisect bisect--helper blame branch
 bugreport bundle cat-file check-attr check-ignore check-mailmap check-ref-format
 checkout checkout--worker checkout-index cherry cherry-pick clean clone column
 commit commit-graph commit-tree config count-objects credential credential-cache
 credential-cache--daemon credential-store daemon describe diagnose diff diff-files
 diff-index diff-tree difftool difftool--helper env--helper fast-export fast-import
 fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo
 format-patch fsck fsck-objects fsmonitor--daemon gc get-tar-commit-id grep
 hash-object help hook http-backend http-fetch http-push imap-send index-pack init
 init-db instaweb interpret-trailers log ls-files ls-remote ls-tree mailinfo
 mailsplit maintenance merge merge-base merge-file merge-index merge-octopus
 merge-one-file merge-ours merge-recursive merge-recursive-ours
 merge-recursive-theirs merge-resolve merge-subtree merge-tree mergetool mktag
 mktree multi-pack-index mv name-rev notes pack-objects pack-redundant pack-refs
 patch-id pickaxe prune prune-packed pull push quiltimport range-diff read-tree
 rebase receive-pack reflog remote remote-ext remote-fd remote-ftp remote-ftps
 remote-http remote-https repack replace request-pull rerere reset restore rev-list
 rev-parse revert rm send-pack sh-i18n--envsubst shell shortlog show show-branch
 show-index show-ref sparse-checkout stage stash status stripspace submodule
 submodule--helper subtree switch symbolic-ref tag unpack-file unpack-objects
 update-index update-ref update-server-info upload-archive upload-archive--writer
 upload-pack var verify-commit verify-pack verify-tag version web--browse
 whatchanged worktree write-tree `

// gitCommand reports whether sub is one of gitCommands.
func gitCommand(sub string) bool {
	if sub == "" || strings.ContainsAny(sub, " \n") {
		return false
	}
	return strings.Contains(gitCommands, " "+sub+" ") || strings.Contains(gitCommands, " "+sub+"\n")
}
