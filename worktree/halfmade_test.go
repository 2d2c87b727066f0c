package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeBesideHalfMadeWorktrees lands a branch while a sibling
// worktree's registration is in each state a concurrent git worktree add
// or remove passes through (or a kill leaves): its HEAD still git's null
// id (add, before it sets HEAD), its commondir, HEAD or gitdir file
// missing, its .git file or its whole directory gone, its registration
// gone with its .git file left. A landing runs beside a removal (the
// coordinator's) and beside checkouts of worktrees made ahead, so every
// git command of a merge must read only the main tree and the shared
// repository, never a sibling worktree: a merge that walked every ref
// (git rev-list --all, whose walk takes in each worktree's HEAD: "fatal:
// bad object worktrees/US-2/HEAD" in the null HEAD state) would fail
// here, as "merge US-2: fatal: not a git repository" was suspected to.
func TestMergeBesideHalfMadeWorktrees(t *testing.T) {
	states := map[string]func(t *testing.T, admin, path string){
		"null HEAD": func(t *testing.T, admin, _ string) {
			write(t, admin, "HEAD", strings.Repeat("0", 40)+"\n")
		},
		"no commondir": func(t *testing.T, admin, _ string) { remove(t, filepath.Join(admin, "commondir")) },
		"no HEAD":      func(t *testing.T, admin, _ string) { remove(t, filepath.Join(admin, "HEAD")) },
		"no gitdir":    func(t *testing.T, admin, _ string) { remove(t, filepath.Join(admin, "gitdir")) },
		"no .git file": func(t *testing.T, _, path string) { remove(t, filepath.Join(path, ".git")) },
		"no worktree":  func(t *testing.T, _, path string) { remove(t, path) },
		"no registration": func(t *testing.T, admin, _ string) {
			remove(t, admin)
		},
	}
	for name, state := range states {
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t)
			ctx := context.Background()
			w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
			if err != nil {
				t.Fatal(err)
			}
			write(t, w.Path, "one.txt", "US-1\n")
			gitT(t, w.Path, "add", "one.txt")
			gitT(t, w.Path, "commit", "-q", "-m", "US-1")
			// The target moved meanwhile: a real merge (merge-tree,
			// commit-tree, read-tree, update-ref), not a fast-forward.
			write(t, repo.Root, "main.txt", "main\n")
			gitT(t, repo.Root, "add", "main.txt")
			gitT(t, repo.Root, "commit", "-q", "-m", "main")

			sibling := filepath.Join(repo.Root, filepath.FromSlash(Dir), "US-2")
			gitT(t, repo.Root, "worktree", "add", "--quiet", "--no-checkout", "--lock", "-b", "wiggum/US-2", sibling, "main")
			admin := filepath.Join(repo.CommonDir, "worktrees", "US-2")
			if !exists(filepath.Join(admin, "HEAD")) {
				t.Fatalf("git keeps the worktree's registration elsewhere than %s", admin)
			}
			state(t, admin, sibling)

			m, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1")
			if err != nil {
				t.Fatalf("merge beside a sibling worktree with %s: %v", name, err)
			}
			if m.FastForward || m.Already {
				t.Fatalf("merge %+v: want a merge commit", m)
			}
			if got := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main")); got != m.Commit {
				t.Errorf("main is at %s, the merge made %s", got, m.Commit)
			}
			for _, f := range []string{"one.txt", "main.txt"} {
				if !exists(filepath.Join(repo.Root, f)) {
					t.Errorf("%s is not in the main tree after the merge", f)
				}
			}
			if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
				t.Errorf("the main tree is not clean after the merge:\n%s", out)
			}
			if _, err := w.Release(ctx, repo); err != nil {
				t.Fatalf("remove US-1's worktree beside it: %v", err)
			}
		})
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// A git worktree add killed after it wrote the worktree's .git file and
// before it finished its record leaves git's placeholder HEAD (the null
// id), or no HEAD, or no commondir, and every git command in the worktree
// fails there ("bad object HEAD"). The next run's cleanup tried to save
// the worktree through its own git and stopped with exit 1 (the soak test
// hit it: "worktree: save US-27 before removing it: ... fatal: bad object
// HEAD"). No checkout and no agent ever happened in it: Reclaim and Prune
// remove it, and leave its branch; a file someone put there is saved
// first, through the main repository.
func TestHalfMadeWorktreeIsRemoved(t *testing.T) {
	states := map[string]func(t *testing.T, admin string){
		"null HEAD":    func(t *testing.T, admin string) { write(t, admin, "HEAD", strings.Repeat("0", 40)+"\n") },
		"no HEAD":      func(t *testing.T, admin string) { remove(t, filepath.Join(admin, "HEAD")) },
		"no commondir": func(t *testing.T, admin string) { remove(t, filepath.Join(admin, "commondir")) },
	}
	for name, state := range states {
		for _, how := range []string{"reclaim", "prune"} {
			for _, stray := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stray=%v", name, how, stray), func(t *testing.T) {
					ctx := context.Background()
					repo := newRepo(t)
					path := filepath.Join(repo.Root, filepath.FromSlash(Dir), "US-2")
					gitT(t, repo.Root, "worktree", "add", "--quiet", "--no-checkout", "--lock", "-b", "wiggum/US-2", path, "main")
					tip := strings.TrimSpace(gitT(t, repo.Root, "commit-tree", "-p", "main", "-m", "on the branch", "main^{tree}"))
					gitT(t, repo.Root, "update-ref", "refs/heads/wiggum/US-2", tip)
					state(t, filepath.Join(repo.CommonDir, "worktrees", "US-2"))
					if stray {
						write(t, path, "stray.txt", "put here by someone\n")
					}
					var backup string
					switch how {
					case "reclaim":
						got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{})
						if err != nil || len(got) != 1 {
							t.Fatalf("reclaim: %+v, %v", got, err)
						}
						backup = got[0].Backup
					case "prune":
						got, err := Prune(ctx, repo, false)
						if err != nil || len(got) != 1 || got[0].Action != "removed" {
							t.Fatalf("prune: %+v, %v", got, err)
						}
						backup = got[0].Backup
					}
					if exists(path) {
						t.Error("the worktree is still there")
					}
					if out := gitT(t, repo.Root, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
						t.Errorf("worktrees left:\n%s", out)
					}
					// The branch's commit is kept: on the branch, left as it
					// is when git's record names none, or in the backup
					// that saved it before the branch went.
					kept := strings.TrimSpace(gitT(t, repo.Root, "for-each-ref", "--contains", tip, "--format=%(refname)", "refs/heads/wiggum/", "refs/wiggum/backup/"))
					if kept == "" {
						t.Errorf("the branch's commit %s is on no branch and in no backup", tip)
					}
					if stray {
						if backup == "" || !strings.Contains(gitT(t, repo.Root, "show", backup+":stray.txt"), "put here by someone") {
							t.Errorf("the stray file is not saved (backup %q)", backup)
						}
					}
				})
			}
		}
	}
}
