package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// largeAgent writes a new 2 MB file, a small one, and, with GROW set (one
// worker: two would conflict there), grows the tracked data.bin past 2 MB.
const largeAgent = `cat > /dev/null
head -c 2000000 /dev/urandom > "big-$WIGGUM_STORY.bin"
echo "$WIGGUM_STORY" > "small-$WIGGUM_STORY.txt"
[ -z "$GROW" ] || head -c 2000000 /dev/urandom >> data.bin
`

// An agent that leaves a large new file - a download, a build's binary, a
// dump - had it committed with its story: in the history for good, and a
// push to a git host that refuses files that large (GitHub: 100 MB) fails
// for every commit after it. A new file over --max-file-size is left out
// of the commit and said; in the main tree it stays where it is, in a
// parallel worktree its backup keeps it. A tracked file that grew is the
// project's, and committed; a file git LFS stores is committed as its
// pointer.
func TestLargeNewFileLeftOutOfTheCommit(t *testing.T) {
	for _, c := range []struct {
		name    string
		workers string
		lfs     bool
	}{
		{"serial", "1", false},
		{"parallel", "2", false},
		{"git lfs", "1", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := newRepo(t)
			writeFile(t, filepath.Join(dir, "plan.md"), "- [ ] US-1: one\n- [ ] US-2: two\n")
			writeFile(t, filepath.Join(dir, "data.bin"), "small\n")
			if c.lfs {
				needTool(t, "git-lfs", "git-lfs")
				mustRun(t, dir, "git", "lfs", "install", "--local")
				mustRun(t, dir, "git", "lfs", "track", "big-*.bin")
			}
			mustRun(t, dir, "git", "add", "-A")
			mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
			agent := filepath.Join(t.TempDir(), "agent.sh")
			writeFile(t, agent, largeAgent)
			var env []string
			if c.workers == "1" {
				env = []string{"GROW=1"}
			}
			r := wiggum(t, dir, env, "run", "--plan", "plan.md", "--workers", c.workers, "--max-file-size", "1", "--agent-cmd", "sh "+agent)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			objects := mustRun(t, dir, "git", "rev-list", "--objects", "HEAD")
			for _, s := range []string{"US-1", "US-2"} {
				if !strings.Contains(objects, " small-"+s+".txt\n") {
					t.Errorf("small-%s.txt is not committed", s)
				}
				big := "big-" + s + ".bin"
				committed := strings.Contains(objects, " "+big+"\n")
				switch {
				case c.lfs && !committed:
					t.Errorf("%s, stored by git LFS, is not committed:\n%s", big, r.stdout)
				case c.lfs:
					if ptr := mustRun(t, dir, "git", "cat-file", "-p", "HEAD:"+big); !strings.HasPrefix(ptr, "version https://git-lfs") {
						t.Errorf("%s is committed as its content, not its LFS pointer", big)
					}
				case committed:
					t.Errorf("%s (2 MB, over --max-file-size 1) is committed", big)
				case !strings.Contains(r.stdout, big+" (2 MB) is a new file over --max-file-size 1 MB: not committed"):
					t.Errorf("the run does not say it left %s out:\n%s", big, r.stdout)
				}
			}
			if size := mustRun(t, dir, "git", "cat-file", "-s", "HEAD:data.bin"); c.workers == "1" && strings.TrimSpace(size) == "6" {
				t.Error("data.bin, tracked, grew and was not committed")
			}
			switch {
			case c.lfs:
			case c.workers == "1":
				if fi, err := os.Stat(filepath.Join(dir, "big-US-1.bin")); err != nil || fi.Size() != 2000000 {
					t.Errorf("big-US-1.bin is not in the tree: %v", err)
				}
			default:
				if !strings.Contains(r.stdout, "its worktree's backup keeps it (wiggum recover)") {
					t.Errorf("the run does not say where the file is kept:\n%s", r.stdout)
				}
				if !inSomeBackup(t, dir, "big-US-1.bin") {
					t.Error("big-US-1.bin is in no backup")
				}
			}
		})
	}
}
