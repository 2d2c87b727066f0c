package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diskFullScript runs, in a mount namespace of its own, a run on a
// repository in a small tmpfs filled to within 1 MB: the agent writes
// 700 kB, so git cannot store it - neither to commit it nor, for the
// rollback, to save it. Then it frees the space (removes the filler, as a
// person would) and runs again. What each step printed and left is in $OUT.
const diskFullScript = `set -u
mnt=$1 out=$2 wig=$3 gate=$4 workers=$5
mount -t tmpfs -o size=16m tmpfs "$mnt" || exit 97
cd "$mnt" && git init -q r && cd r || exit 98
printf 'a\n' > a.txt
printf -- '- [ ] US-1: one\n- [ ] US-2: two\n' > plan.md
git add -A && git commit -q -m init || exit 98
free=$(df --output=avail -B1 . | tail -1)
head -c $((free - 1048576)) /dev/zero > ../filler || exit 98
agent='cat >/dev/null; head -c 700000 /dev/urandom > work-$WIGGUM_STORY.bin'
"$wig" run --plan plan.md --workers "$workers" --agent-cmd "$agent" --test-cmd "$gate" >"$out/run1.out" 2>"$out/run1.err"; echo $? >"$out/run1.code"
git status --porcelain >"$out/status1"
"$wig" status >"$out/wstatus1" 2>&1
rm ../filler; : > ../mended
"$wig" run --plan plan.md --workers "$workers" --agent-cmd "$agent" --test-cmd "$gate" >"$out/run2.out" 2>"$out/run2.err"; echo $? >"$out/run2.code"
git log --format=%s >"$out/log"
git status --porcelain >"$out/status2"
git for-each-ref --format='%(refname)' refs/wiggum/backup/ >"$out/backups"
for b in $(cat "$out/backups"); do git ls-tree -r --name-only "$b" >>"$out/backup-files"; done
git ls-tree -r --name-only HEAD >"$out/files"
`

// TestDiskFullStopsAndResumes: the disk fills during an attempt, so its
// commit fails and so does the rollback (which must save the work first).
// The run stops at once - exit 1, saying the disk is full and what it left
// - instead of burning the story's attempts; its journal stays open with
// the attempt unfinished. Once space is freed, the next run resumes:
//   - passed: the agent had finished and its checks had passed, only the
//     commit failed - the resume commits that work with its tick;
//   - failed: the checks failed - the resume saves that work under
//     refs/wiggum/backup/, puts the tree back, and does the story again;
//   - parallel: the same in a worker's worktree (the second agent's own
//     write fails there): saved, the worktree removed, the story redone.
//
// Before, the run closed its journal and left the plan ticked and the
// work in the tree, and the next run refused the dirty tree (plan.md).
func TestDiskFullStopsAndResumes(t *testing.T) {
	unshare := needTool(t, "unshare", "util-linux")
	for _, c := range []struct{ name, gate, workers string }{
		{"passed", "true", "1"},
		{"failed", "test -e ../mended", "1"},
		{"parallel", "test -e ../../../../../mended", "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mnt, out := t.TempDir(), t.TempDir()
			script := filepath.Join(out, "diskfull.sh")
			writeFile(t, script, diskFullScript)
			r := run(t, out, nil, unshare, "-m", "bash", script, mnt, out, wiggumBin, c.gate, c.workers)
			if r.code == 97 && os.Getenv("CI") == "" {
				t.Skipf("cannot mount a tmpfs here: %s", r.stderr)
			}
			if r.code != 0 {
				t.Fatalf("script: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			read := func(name string) string {
				data, _ := os.ReadFile(filepath.Join(out, name))
				return string(data)
			}
			run1 := read("run1.out") + read("run1.err")
			if code := strings.TrimSpace(read("run1.code")); code != "1" {
				t.Fatalf("first run: exit %s, want 1\n%s", code, run1)
			}
			stuck := "US-1 failed ("
			if c.workers != "1" {
				stuck = " failed (" // whichever worker's disk write failed first
			}
			wants := []string{stuck, "and its rollback failed too", "No space left on device",
				"The disk holding the repository is full.", "Its work is left in the tree as it was", "resume with: wiggum run --plan plan.md"}
			if c.name == "passed" {
				// Its commit failed for want of space: no failure of the
				// story's, and no rollback is tried (CommitWriteError).
				wants = []string{"US-1 passed, but git could not write its commit", "No space left on device",
					"the disk holding the repository is full", "left in the tree as it was", "resume with: wiggum run --plan plan.md"}
			}
			for _, want := range wants {
				if !strings.Contains(run1, want) {
					t.Errorf("the first run does not say %q:\n%s", want, run1)
				}
			}
			if strings.Contains(run1, "attempt 2 of") {
				t.Errorf("the first run went on to another attempt on a full disk:\n%s", run1)
			}
			if st := read("wstatus1"); !strings.Contains(st, "was interrupted") || !strings.Contains(st, "it stopped because US-") ||
				!strings.Contains(strings.ToLower(st), "the disk holding the repository is full") || !strings.Contains(st, "resume it with: wiggum run --plan plan.md") {
				t.Errorf("wiggum status does not say why the run stopped and how to resume:\n%s", st)
			}
			if c.workers == "1" && !strings.Contains(read("status1"), "work-US-1.bin") {
				t.Errorf("the attempt's work is not left in the tree:\n%s", read("status1"))
			}
			run2 := read("run2.out") + read("run2.err")
			if code := strings.TrimSpace(read("run2.code")); code != "0" {
				t.Fatalf("the run after space was freed: exit %s, want 0\n%s\nfirst run:\n%s", code, run2, run1)
			}
			if !strings.Contains(run2, "resuming the interrupted run of plan.md") {
				t.Errorf("the second run does not resume:\n%s", run2)
			}
			if log := "\n" + read("log"); strings.Count(log, "\nUS-1: one\n") != 1 || strings.Count(log, "\nUS-2: two\n") != 1 {
				t.Errorf("each story is not committed once:\n%s", log)
			}
			if st := read("status2"); st != "" {
				t.Errorf("the tree is not clean after the resumed run:\n%s", st)
			}
			if files := read("files"); !strings.Contains(files, "work-US-1.bin") || !strings.Contains(files, "work-US-2.bin") {
				t.Errorf("the stories' work is not committed:\n%s", files)
			}
			switch c.name {
			case "passed":
				if !strings.Contains(run2, "US-1: its attempt had finished before the crash") || read("backups") != "" {
					t.Errorf("the resume did not commit the passed attempt as it was (backups: %q):\n%s", read("backups"), run2)
				}
			case "failed":
				if !strings.Contains(read("backup-files"), "work-US-1.bin") {
					t.Errorf("the failed attempt's work is not saved under refs/wiggum/backup/ (%q):\n%s", read("backups"), run2)
				}
			case "parallel":
				// The stuck attempt's worktree: saved, removed, redone.
				if !strings.Contains(run2, ": saved its partial work as refs/wiggum/backup/") || read("backups") == "" {
					t.Errorf("the resume did not save the worktrees' work (backups: %q):\n%s", read("backups"), run2)
				}
			}
		})
	}
}

// worktreeFullScript runs, in a mount namespace of its own, a 4-worker
// run whose worktree directory is a tmpfs that holds two checkouts of the
// repository, not more; then it unmounts it (space freed) and runs again.
const worktreeFullScript = `set -u
repo=$1 out=$2 wig=$3
cd "$repo" || exit 98
mkdir -p .ralph/wiggum/worktrees
mount -t tmpfs -o size=3m tmpfs .ralph/wiggum/worktrees || exit 97
agent='cat >/dev/null; echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"; sleep 0.5'
"$wig" run --plan plan.md --workers 4 --agent-cmd "$agent" >"$out/run1.out" 2>"$out/run1.err"; echo $? >"$out/run1.code"
"$wig" status >"$out/wstatus1" 2>&1
umount .ralph/wiggum/worktrees || exit 98
"$wig" run --plan plan.md --workers 4 --agent-cmd "$agent" >"$out/run2.out" 2>"$out/run2.err"; echo $? >"$out/run2.code"
`

// TestWorktreeDiskFullStopsResumable: a worktree that cannot be checked
// out because the disk under the worktree directory is full (git says only
// "unable to write file") stops the run with exit 1 saying the disk is
// full and where, its journal open: wiggum status calls it interrupted,
// and once space is freed the next run resumes it (its spending goes on,
// --max-cost is not spent twice) and finishes every story. (Before, the run
// stopped with git's raw error and closed its journal.)
func TestWorktreeDiskFullStopsResumable(t *testing.T) {
	unshare := needTool(t, "unshare", "util-linux")
	dir, _, _ := scriptRepo(t, "", 8, "")
	big := make([]byte, 1400000)
	for i := range big {
		big[i] = byte('a' + (i*7919)%26)
		if i%77 == 76 {
			big[i] = '\n'
		}
	}
	writeFile(t, filepath.Join(dir, "big.txt"), string(big))
	mustRun(t, dir, "git", "add", "big.txt")
	mustRun(t, dir, "git", "commit", "-q", "-m", "big")
	read := tmpfsScript(t, unshare, "wtfull.sh", worktreeFullScript, dir, nil)
	run1 := read("run1.out") + read("run1.err")
	if code := strings.TrimSpace(read("run1.code")); code != "1" {
		t.Fatalf("first run: exit %s, want 1\n%s", code, run1)
	}
	for _, want := range []string{"disk holding the repository is full", ".ralph/wiggum/worktrees", "resume with: wiggum run --plan plan.md"} {
		if !strings.Contains(run1, want) {
			t.Errorf("the first run does not say %q:\n%s", want, run1)
		}
	}
	if st := read("wstatus1"); !strings.Contains(st, "was interrupted") {
		t.Errorf("wiggum status does not call the run interrupted:\n%s", st)
	}
	run2 := read("run2.out") + read("run2.err")
	if code := strings.TrimSpace(read("run2.code")); code != "0" {
		t.Fatalf("the run after space was freed: exit %s, want 0\n%s\nfirst run:\n%s", code, run2, run1)
	}
	if !strings.Contains(run2, "resuming the interrupted run of plan.md") {
		t.Errorf("the second run does not resume:\n%s", run2)
	}
	if plan := readFile(t, filepath.Join(dir, "plan.md")); strings.Contains(plan, "[ ]") {
		t.Errorf("stories left open:\n%s", plan)
	}
}

// mergeFullScript runs, in a mount namespace of its own, a 2-worker run
// of one story on a repository in a small tmpfs whose agent fills the disk
// but for a few pages, so that the worker's commit fits and the landing's
// update of the main tree does not: the merge fails after it recorded its
// intent, and is finished (the target moved) by the next holder of the
// repository mutex. Which number of pages leaves exactly that depends on
// git's writes, so it tries several until the first run says so
// ("the next run finishes the merge"); then it frees the space and runs
// again.
const mergeFullScript = `set -u
mnt=$1 out=$2 wig=$3
mount -t tmpfs -o size=8m tmpfs "$mnt" || exit 97
cat > "$mnt/agent.sh" <<AGENT
#!/bin/bash
cat >/dev/null
echo "work for \$WIGGUM_STORY" > "work-\$WIGGUM_STORY.txt"; echo "more \$WIGGUM_STORY" >> README.md
if [ ! -e "$mnt/filled" ]; then : > "$mnt/filled"; dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null; truncate -s -\$(cat "$mnt/leave") "$mnt/filler"; fi
exit 0
AGENT
chmod +x "$mnt/agent.sh"
for pages in 6 7 5 8 4 9 10; do
  cd "$mnt" && rm -rf r filler filled && echo $((pages * 4096)) > leave || exit 98
  git init -q r && cd r || exit 98
  printf 'hello\n' > README.md
  printf -- '- [ ] US-1: one\n' > plan.md
  git add -A && git commit -q -m init || exit 98
  "$wig" run --plan plan.md --workers 2 --agent-cmd "$mnt/agent.sh" >"$out/run1.out" 2>"$out/run1.err"; echo $? >"$out/run1.code"
  grep -q "the next run finishes the merge" "$out/run1.err" && break
done
grep -q "the next run finishes the merge" "$out/run1.err" || exit 96
rm ../filler
"$wig" run --plan plan.md --workers 2 --agent-cmd "$mnt/agent.sh" >"$out/run2.out" 2>"$out/run2.err"; echo $? >"$out/run2.code"
git log --format=%s >"$out/log"
git status --porcelain >"$out/status2"
git branch --format='%(refname:short)' >"$out/branches"
cat README.md >"$out/readme"
cat plan.md >"$out/plan"
`

// TestMergeDiskFullLandsOnce: a full disk during a landing's update of
// the main tree, after the merge recorded its intent, stops the run; the
// next holder of the repository mutex finishes that merge, moving the
// target to the story's branch. The next run, once space is freed, ticks
// the story and commits the tick without giving it to an agent again.
// (Before, the branch, merged, was no kept branch any more, the story was
// open, and its agent ran again: its work applied twice.)
func TestMergeDiskFullLandsOnce(t *testing.T) {
	unshare := needTool(t, "unshare", "util-linux")
	read := tmpfsScript(t, unshare, "mergefull.sh", mergeFullScript, t.TempDir(), map[int]string{
		96: "no amount of free space made the landing's tree update fail; the last first run said:\n{run1.out}{run1.err}"})
	run1 := read("run1.out") + read("run1.err")
	run2 := read("run2.out") + read("run2.err")
	if code := strings.TrimSpace(read("run2.code")); code != "0" {
		t.Fatalf("the run after space was freed: exit %s, want 0\n%s\nfirst run:\n%s", code, run2, run1)
	}
	if strings.Contains(run2, "── iteration") {
		t.Errorf("the second run gave the landed story to an agent again:\n%s\nfirst run:\n%s", run2, run1)
	}
	if !strings.Contains(run2, "US-1: its branch wiggum/US-1 was merged into main") {
		t.Errorf("the second run does not say it ticked the landed story:\n%s", run2)
	}
	if log := "\n" + read("log"); strings.Count(log, "\nUS-1: one\n") != 1 {
		t.Errorf("the story is not committed once:\n%s", log)
	}
	if got := read("readme"); got != "hello\nmore US-1\n" {
		t.Errorf("README.md = %q, want the story's line once", got)
	}
	if !strings.Contains(read("plan"), "[x] US-1") {
		t.Errorf("US-1 is not ticked:\n%s", read("plan"))
	}
	if st := read("status2"); st != "" {
		t.Errorf("the tree is not clean after the second run:\n%s", st)
	}
	if b := read("branches"); strings.Contains(b, "wiggum/") {
		t.Errorf("the story's branch is left:\n%s", b)
	}
}

// commitFullScript runs, in a mount namespace of its own, a 2-worker run
// of one story on a repository whose object store (.git/objects) is a
// small tmpfs. The repository's pre-commit hook fills that tmpfs the first
// time it runs - at the story's commit, after the agent's work passed -
// so git cannot write the commit's objects ("No space left on device");
// its commit-msg hook, run next by that commit, leaves the disk full, and
// frees the space when anything runs it after that (the old code did,
// checking the message before it rolled the work back: the space other
// workers free at such a time). Then the space is freed and the run is
// made again.
const commitFullScript = `set -u
repo=$1 out=$2 wig=$3
cd "$repo" || exit 98
printf 'hello\n' > README.md
printf -- '- [ ] US-1: one\n' > plan.md
git add -A && git commit -q -m init || exit 98
obj="$repo/.git/objects"
mv "$obj" "$obj.orig" && mkdir "$obj" || exit 98
mount -t tmpfs -o size=8m tmpfs "$obj" || exit 97
cp -a "$obj.orig/." "$obj/" && rm -rf "$obj.orig" || exit 98
cat > .git/hooks/pre-commit <<HOOK
#!/bin/sh
if [ ! -e "$out/filled" ]; then : > "$out/filled"; dd if=/dev/zero of="$obj/filler" bs=4k 2>/dev/null; fi
exit 0
HOOK
cat > .git/hooks/commit-msg <<HOOK
#!/bin/sh
if [ -e "$out/filled" ]; then
  if [ -e "$out/seen" ]; then rm -f "$obj/filler"; else : > "$out/seen"; fi
fi
exit 0
HOOK
chmod +x .git/hooks/pre-commit .git/hooks/commit-msg
agent='cat >/dev/null; echo "work for $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"; echo "more $WIGGUM_STORY" >> README.md'
"$wig" run --plan plan.md --workers 2 --agent-cmd "$agent" >"$out/run1.out" 2>"$out/run1.err"; echo $? >"$out/run1.code"
"$wig" status >"$out/wstatus1" 2>&1
rm -f "$obj/filler"
"$wig" run --plan plan.md --workers 2 --agent-cmd "$agent" >"$out/run2.out" 2>"$out/run2.err"; echo $? >"$out/run2.code"
git log --format=%s >"$out/log"
git status --porcelain >"$out/status2"
git for-each-ref --format='%(refname)' refs/wiggum/backup/ >"$out/backups"
cat README.md >"$out/readme"
`

// TestCommitDiskFullKeepsPassedWork: a worker's attempt passes and the
// disk fills as git commits it. That is no failure of the agent's: the
// run stops (exit 1, the disk named) with the work left in its worktree
// and the pass in the journal, and once space is freed the next run
// commits and lands it without running the agent again. (Before, the
// attempt counted as the story's failure: its passing work was rolled
// back and an agent did the story again.)
func TestCommitDiskFullKeepsPassedWork(t *testing.T) {
	unshare := needTool(t, "unshare", "util-linux")
	repo := t.TempDir()
	mustRun(t, repo, "git", "init", "-q")
	read := tmpfsScript(t, unshare, "commitfull.sh", commitFullScript, repo, nil)
	run1 := read("run1.out") + read("run1.err")
	if code := strings.TrimSpace(read("run1.code")); code != "1" {
		t.Fatalf("first run: exit %s, want 1\n%s", code, run1)
	}
	for _, want := range []string{"US-1 passed, but git could not write its commit", "the disk holding the repository is full", "resume with: wiggum run --plan plan.md"} {
		if !strings.Contains(run1, want) {
			t.Errorf("the first run does not say %q:\n%s", want, run1)
		}
	}
	if strings.Contains(run1, "rolled back") || strings.Contains(run1, "attempt 2 of") {
		t.Errorf("the first run rolled the passed work back or ran the agent again:\n%s", run1)
	}
	if st := read("wstatus1"); !strings.Contains(st, "was interrupted") {
		t.Errorf("wiggum status does not call the run interrupted:\n%s", st)
	}
	run2 := read("run2.out") + read("run2.err")
	if code := strings.TrimSpace(read("run2.code")); code != "0" {
		t.Fatalf("the run after space was freed: exit %s, want 0\n%s\nfirst run:\n%s", code, run2, run1)
	}
	if strings.Contains(run2, "── iteration") {
		t.Errorf("the second run ran the agent again:\n%s", run2)
	}
	if log := "\n" + read("log"); strings.Count(log, "\nUS-1: one\n") != 1 {
		t.Errorf("the story is not committed once:\n%s", log)
	}
	if got := read("readme"); got != "hello\nmore US-1\n" {
		t.Errorf("README.md = %q, want the story's line once", got)
	}
	if st := read("status2"); st != "" {
		t.Errorf("the tree is not clean after the second run:\n%s", st)
	}
	if b := read("backups"); b != "" {
		t.Errorf("the passed work was rolled back (saved in %s)", b)
	}
}

// tmpfsScript runs a script that mounts a tmpfs (in a mount namespace of
// its own, unshare -m: nothing is left mounted) with its arguments dir,
// an output directory and the wiggum binary, and returns a reader of the
// files it wrote there. Exit 97 is "cannot mount here" (a skip, but
// never in CI); the other exits of fail say why the test fails ("{name}"
// is replaced by that output file's content).
func tmpfsScript(t *testing.T, unshare, name, body, dir string, fail map[int]string) func(string) string {
	t.Helper()
	out := t.TempDir()
	script := filepath.Join(out, name)
	writeFile(t, script, body)
	r := run(t, out, nil, unshare, "-m", "bash", script, dir, out, wiggumBin)
	if r.code == 97 && os.Getenv("CI") == "" {
		t.Skipf("cannot mount a tmpfs here: %s", r.stderr)
	}
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(out, name))
		return string(data)
	}
	if why, ok := fail[r.code]; ok {
		for _, f := range []string{"run1.out", "run1.err"} {
			why = strings.ReplaceAll(why, "{"+f+"}", read(f))
		}
		t.Fatal(why)
	}
	if r.code != 0 {
		t.Fatalf("script: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return read
}
