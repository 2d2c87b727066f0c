package loop

import (
	"os"
	"path/filepath"

	"github.com/wiggum-dev/wiggum/internal/sandboxdirs"
)

// leavesSandboxDirs: the built-in agents whose sandbox leaves empty
// directories behind (package sandboxdirs). A
// --agent-cmd wrapping codex is not known to be codex: nothing is taken.
func leavesSandboxDirs(agent string) bool { return agent == "codex" }

// tempRoots are the temporary directories codex's sandbox may write:
// os.TempDir() and /tmp.
func tempRoots() []string {
	roots := []string{filepath.Clean(os.TempDir())}
	if roots[0] != "/tmp" {
		roots = append(roots, "/tmp")
	}
	return roots
}

// sandboxWatch is what an attempt of codex found missing before it ran.
type sandboxWatch struct {
	tree []string // in the tree the attempt runs in
}

// watchSandbox notes, for a codex attempt, which of sandboxdirs.Names are
// missing in its tree, and - shared by a parallel run's workers - in the temporary
// directories: those are noted when the first codex attempt in flight
// starts, and looked at when the last ends, so no other attempt's live
// sandbox is in them then.
func (e *executor) watchSandbox() *sandboxWatch {
	if !leavesSandboxDirs(e.run.opts.Agent.Name) {
		return nil
	}
	r := e.run
	r.sandboxMu.Lock()
	if r.sandboxBusy == 0 {
		r.sandboxTemp = sandboxdirs.Missing(tempRoots())
	}
	r.sandboxBusy++
	r.sandboxMu.Unlock()
	return &sandboxWatch{tree: sandboxdirs.Missing([]string{e.st.Repo.Root})}
}

// takeBackSandbox removes what the attempt's codex left (sandboxdirs.TakeBack),
// saying so.
func (e *executor) takeBackSandbox(w *sandboxWatch) {
	if w == nil {
		return
	}
	removed := sandboxdirs.TakeBack(w.tree)
	r := e.run
	r.sandboxMu.Lock()
	r.sandboxBusy--
	if r.sandboxBusy == 0 {
		removed = append(removed, sandboxdirs.TakeBack(r.sandboxTemp)...)
		r.sandboxTemp = nil
	}
	r.sandboxMu.Unlock()
	for _, p := range removed {
		e.disp.printf("  codex's sandbox left empty %s: removed (%s)", p, sandboxdirs.Issue)
	}
}
