package loop

import (
	"os"
	"path/filepath"
	"testing"
)

// The agents' socket directories are made under $XDG_RUNTIME_DIR when it
// is usable, else in the temporary directory; private, one per executor,
// made again when an agent removed them, and all gone at the run's end.
func TestAgentMuxDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	xdg := t.TempDir()
	for _, c := range []struct{ xdg, parent string }{
		{xdg, xdg},
		{filepath.Join(xdg, "missing"), tmp},
		{"relative", tmp},
		{"", tmp},
	} {
		t.Setenv("XDG_RUNTIME_DIR", c.xdg)
		r := &run{}
		a, err := r.agentMuxDir()
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.agentMuxDir()
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Dir(a)
		if filepath.Dir(base) != c.parent || filepath.Dir(b) != base || a == b {
			t.Errorf("XDG_RUNTIME_DIR=%q: directories %s and %s, want two in one under %s", c.xdg, a, b, c.parent)
		}
		for _, d := range []string{base, a, b} {
			if fi, err := os.Lstat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a directory 0700", d, fi, err)
			}
		}
		// An agent removes the run's directory: the next executor's is in
		// a new one, and the run's end removes both.
		if err := os.RemoveAll(base); err != nil {
			t.Fatal(err)
		}
		c2, err := r.agentMuxDir()
		if err != nil || filepath.Dir(c2) == base {
			t.Fatalf("after the run's directory was removed: %s, %v", c2, err)
		}
		r.removeMuxDirs()
		if _, err := os.Lstat(filepath.Dir(c2)); !os.IsNotExist(err) {
			t.Errorf("the run's end left %s: %v", filepath.Dir(c2), err)
		}
	}
}
