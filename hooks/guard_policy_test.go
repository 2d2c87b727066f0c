package hooks

import (
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/guard"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// The guard protects what checkpoint and install actually write: a path or
// ref renamed there must not leave the guard protecting the old name.
func TestGuardPolicyCoversWiggumState(t *testing.T) {
	if !strings.HasPrefix(checkpoint.BackupPrefix, wiggumRefs) {
		t.Errorf("backups under %s are outside the guarded refs %s", checkpoint.BackupPrefix, wiggumRefs)
	}
	p := guardPolicy("/r", "/r")
	for _, path := range []string{layout.LockFile, layout.HolderFile, layout.RuntimeDir + "/" + layout.JournalFile, layout.StateDir} {
		if d := guard.Check("rm -f "+path, p); d.Action != guard.Deny {
			t.Errorf("rm -f %s: %s", path, d.Action)
		}
		if d := guard.CheckEdit(path, p); path != layout.StateDir && d.Action != guard.Deny {
			t.Errorf("edit %s: %s", path, d.Action)
		}
	}
	if d := guard.Check("git update-ref -d "+checkpoint.BackupPrefix+"x", p); d.Action != guard.Deny {
		t.Errorf("deleting a backup ref: %s", d.Action)
	}
	if len(p.HookFiles) != len(GitHooks) {
		t.Errorf("hook files %v, installed hooks %v", p.HookFiles, GitHooks)
	}
}
