package hooks

import "testing"

// Only a switch to the run's branch (or making it) is answered by the
// shim; reading files from it, or any other switch, goes to git.
func TestSwitchesTo(t *testing.T) {
	const target = "ralph/x"
	for _, c := range []struct {
		cmd  string
		rest []string
		want bool
	}{
		{"checkout", []string{"ralph/x"}, true},
		{"checkout", []string{"-q", "ralph/x"}, true},
		{"switch", []string{"ralph/x"}, true},
		{"checkout", []string{"-b", "ralph/x", "main"}, true},
		{"checkout", []string{"-B", "ralph/x"}, true},
		{"switch", []string{"-c", "ralph/x", "main"}, true},
		{"switch", []string{"--track", "ralph/x"}, true},
		{"switch", []string{"-q", "--ignore-other-worktrees", "ralph/x"}, true},
		{"checkout", []string{"--ignore-other-worktrees", "-q", "ralph/x"}, true},
		{"checkout", []string{"--ignore-other-worktrees", "-f", "ralph/x"}, false},
		{"checkout", []string{"ralph/x", "--", "file"}, false},
		{"checkout", []string{"ralph/x", "file"}, false},
		{"checkout", []string{"--", "ralph/x"}, false},
		{"checkout", []string{"main"}, false},
		{"checkout", []string{"-b", "other", "ralph/x"}, false},
		{"checkout", []string{"-b", "ralph/x", "main", "extra"}, false},
		{"checkout", []string{"-b"}, false},
		{"checkout", []string{"--detach", "ralph/x"}, false},
		{"checkout", []string{"-p", "ralph/x"}, false},
		{"switch", []string{"--orphan", "ralph/x"}, false},
		{"restore", []string{"ralph/x"}, false},
		{"checkout", nil, false},
	} {
		if got := switchesTo(c.rest, c.cmd, target); got != c.want {
			t.Errorf("git %s %q: %v, want %v", c.cmd, c.rest, got, c.want)
		}
	}
}
