package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// git writes loose objects and refs without fsync (its default
// core.fsync), and the kernel keeps them in memory for up to half a
// minute: a power cut right after a rollback could keep the rollback's
// changes to the working tree and lose the backup holding what it
// discarded - empty object files, an empty ref. No test here can cut the
// power; strace shows the order the kernel was asked for: the backup ref
// written, then the filesystem synced (syncfs), then the first file of
// the working tree changed. The same holds for wiggum recover, which saves
// the tree before putting a backup in it.
func TestBackupIsOnDiskBeforeAnythingIsDiscarded(t *testing.T) {
	strace := needTool(t, "strace", "strace")
	dir := newRepo(t)
	mustRun(t, dir, wiggumBin, "checkpoint")
	writeFile(t, filepath.Join(dir, "a.txt"), "the agent's change\n")
	writeFile(t, filepath.Join(dir, "new.txt"), "the agent's new file\n")

	traced := func(args ...string) []string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "trace")
		r := run(t, dir, nil, strace, append([]string{"-f", "-qq", "-e", "trace=syncfs,fsync,fdatasync,sync,unlink,unlinkat,openat,rename,renameat,renameat2", "-o", out, wiggumBin}, args...)...)
		if r.code != 0 {
			t.Fatalf("wiggum %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(data), "\n")
	}
	first := func(lines []string, re *regexp.Regexp) int {
		for i, l := range lines {
			if re.MatchString(l) {
				return i
			}
		}
		return -1
	}
	// A file of the working tree (not under .git) unlinked, or opened to
	// be written.
	touched := func(names ...string) *regexp.Regexp {
		q := regexp.QuoteMeta(dir)
		alt := strings.Join(names, "|")
		return regexp.MustCompile(`(unlink(at)?\([^"]*"(` + q + `/)?(` + alt + `)"|openat\([^"]*"(` + q + `/)?(` + alt + `)", O_WRONLY|openat\([^"]*"(` + q + `/)?(` + alt + `)", O_RDWR)`)
	}
	synced := regexp.MustCompile(`\b(syncfs|sync)\(`)
	check := func(what string, lines []string, saved, discard *regexp.Regexp) {
		t.Helper()
		s, y, d := first(lines, saved), -1, first(lines, discard)
		if s >= 0 {
			for i := s + 1; i < len(lines); i++ {
				if synced.MatchString(lines[i]) {
					y = i
					break
				}
			}
		}
		switch {
		case s < 0 || d < 0:
			t.Fatalf("%s: the trace shows no backup ref written (%d) or no file discarded (%d):\n%s", what, s, d, strings.Join(lines, "\n"))
		case y < 0 || y > d:
			t.Errorf("%s: the working tree changed (trace line %d: %s) before the backup ref (line %d) was synced to disk (sync at line %d)",
				what, d+1, lines[d], s+1, y+1)
		}
	}
	backupRef := regexp.MustCompile(`rename\([^)]*refs/wiggum/backup/[^"]*\.lock", "[^"]*refs/wiggum/backup/`)

	lines := traced("rollback")
	check("wiggum rollback", lines, backupRef, touched("a.txt", "new.txt"))
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "a\n" {
		t.Fatalf("a.txt after the rollback: %q", data)
	}
	backup := strings.TrimSpace(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname:lstrip=3)", "refs/wiggum/backup/"))

	// recover saves the tree as it is, then puts the backup in it.
	writeFile(t, filepath.Join(dir, "a.txt"), "a change of mine\n")
	lines = traced("recover", backup)
	check("wiggum recover", lines, backupRef, touched("a.txt"))
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "the agent's change\n" {
		t.Fatalf("a.txt after the recover: %q", data)
	}
}
