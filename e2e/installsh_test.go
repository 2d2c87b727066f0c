package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// installSh runs the README's ./install.sh with GOBIN set to a directory
// that is not on PATH (a fresh machine: Go's own bin is on PATH, GOPATH/bin
// is not), HOME at home, and PATH the given directories plus one holding
// only go and git. It returns the combined output.
func installSh(t *testing.T, gobin, home string, path ...string) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(t.TempDir(), "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go", "git"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "GOBIN=" + gobin,
		"PATH=" + strings.Join(append(path, tools, "/usr/bin", "/bin"), ":")}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	cmd := exec.Command("sh", filepath.Join(root, "install.sh"))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	return string(out)
}

// TestInstallShLinksOntoPath: `./install.sh && wiggum demo` on a machine
// whose PATH lacks GOBIN runs the wiggum just built - install.sh links it
// into ~/.local/bin when that is on PATH (before, 'wiggum' was not found) -
// and never replaces a file there that is not its own link.
func TestInstallShLinksOntoPath(t *testing.T) {
	dir := t.TempDir()
	gobin, home := filepath.Join(dir, "gobin"), filepath.Join(dir, "home")
	local := filepath.Join(home, ".local", "bin")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	out := installSh(t, gobin, home, local)
	if target, err := os.Readlink(filepath.Join(local, "wiggum")); err != nil || target != filepath.Join(gobin, "wiggum") {
		t.Fatalf("~/.local/bin/wiggum = %q, %v; want a link to %s\n%s", target, err, filepath.Join(gobin, "wiggum"), out)
	}
	if !strings.Contains(out, "linked "+filepath.Join(local, "wiggum")) {
		t.Errorf("install.sh does not say what it linked:\n%s", out)
	}
	// The README's first command's second half, by name through PATH.
	demo := exec.Command("sh", "-c", "cd \"$HOME\" && wiggum --version")
	demo.Env = []string{"HOME=" + home, "PATH=" + local + ":/usr/bin:/bin"}
	if got, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("wiggum by name after install.sh: %v\n%s", err, got)
	}
	// Again: its own link is replaced, quietly.
	out = installSh(t, gobin, home, local)
	if strings.Contains(out, "note:") {
		t.Errorf("second install.sh warns:\n%s", out)
	}

	// Someone else's wiggum there is left alone, and named.
	if err := os.Remove(filepath.Join(local, "wiggum")); err != nil {
		t.Fatal(err)
	}
	other := "#!/bin/sh\necho other wiggum\n"
	if err := os.WriteFile(filepath.Join(local, "wiggum"), []byte(other), 0o755); err != nil {
		t.Fatal(err)
	}
	out = installSh(t, gobin, home, local)
	if data, _ := os.ReadFile(filepath.Join(local, "wiggum")); string(data) != other {
		t.Errorf("install.sh replaced another wiggum in ~/.local/bin: %q", data)
	}
	if !strings.Contains(out, "'wiggum' on your PATH is "+filepath.Join(local, "wiggum")) {
		t.Errorf("install.sh does not say another wiggum answers first:\n%s", out)
	}
}

// TestInstallShNoPlaceOnPath: with no writable directory of its choice on
// PATH, install.sh says how to put GOBIN on PATH and links nothing.
func TestInstallShNoPlaceOnPath(t *testing.T) {
	dir := t.TempDir()
	gobin, home := filepath.Join(dir, "gobin"), filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	out := installSh(t, gobin, home)
	if !strings.Contains(out, "is not on your PATH, so 'wiggum' is not found; add it with:  export PATH=\""+gobin+":$PATH\"") {
		t.Errorf("install.sh does not say how to reach wiggum:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(home, ".local", "bin", "wiggum")); err == nil {
		t.Error("install.sh made a link outside PATH")
	}
	if _, err := os.Stat(filepath.Join(gobin, "wiggum")); err != nil {
		t.Errorf("install.sh did not install into GOBIN: %v", err)
	}
}
