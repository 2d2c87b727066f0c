package hooks

import (
	"fmt"
	"io"
	"strings"

	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
)

// A parallel worker's agent works in a worktree on a branch of its own
// (wiggum/<story>), which lands on the run's branch when the story passes.
// snarktank/ralph's prompt tells the agent to check out the prd.json's
// branchName - the run's branch, checked out in the main tree - "or create
// it": git refuses both in a worker's worktree (the branch is in use, or it
// exists), and an agent that keeps to its instructions failed every
// attempt. As the worker's git, the shim answers such a switch itself: it
// says where the work lands, stays on the worktree's branch and succeeds.

// switchesTo reports whether git CMD REST (checkout or switch) only puts
// HEAD on target, or makes target and puts HEAD on it (-b, -B, -c, -C):
// `git checkout target -- file` and every other form reads or changes
// files, and goes to git.
func switchesTo(rest []string, cmd, target string) bool {
	if cmd != "checkout" && cmd != "switch" {
		return false
	}
	var positional []string
	made := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			return false
		case a == "-b" || a == "-B" || a == "-c" || a == "-C":
			if i+1 >= len(rest) || rest[i+1] != target {
				return false
			}
			made = true
			i++
		case a == "-q" || a == "--quiet" || a == "--track" || a == "-t" || a == "--no-track" || a == "--guess" || a == "--no-guess" || a == "--progress" || a == "--no-progress" ||
			a == "--ignore-other-worktrees":
			// The last one makes git check target out here although the
			// main tree has it: the agent's commits then moved the run's
			// branch under the main tree's files.
		case strings.HasPrefix(a, "-"):
			return false
		default:
			positional = append(positional, a)
		}
	}
	if made {
		return len(positional) <= 1 // the start point
	}
	return len(positional) == 1 && positional[0] == target
}

// stayOnOwnBranch answers the switch to target in dir when dir is a
// worktree of the run's repository (common git dir shared) on a branch
// other than target: the exit code, or -1 to leave the command to git.
func stayOnOwnBranch(dir, shared, target string, stderr io.Writer) int {
	root := gitfiles.FindRoot(dir)
	if root == "" || shared == "" || !gitfiles.InRepository(root, shared) {
		return -1 // a repository of the project's own
	}
	gitDir, _ := gitfiles.Dirs(root)
	branch, known := gitfiles.HeadBranch(gitDir)
	if !known || branch == "" || branch == target {
		return -1
	}
	fmt.Fprintf(stderr, "wiggum: staying on %s: this worktree's branch is merged into %s (checked out in the main tree) once the story passes, so the work already goes on %s; carry on here\n", branch, target, target)
	return 0
}
