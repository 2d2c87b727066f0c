package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// wiggum builds for macOS too, where many agent users work: a
// Linux-only field (Pdeathsig) in a package of the binary broke that
// build, unseen by a suite that runs on Linux. The platform files
// (*_linux.go, *_other.go) keep it building; this keeps them honest.
func TestBuildsForMacOS(t *testing.T) {
	gobin := goOnPath(t)
	for _, arch := range []string{"arm64", "amd64"} {
		cmd := exec.Command(gobin, "build", "-o", filepath.Join(t.TempDir(), "wiggum"), ".")
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=darwin GOARCH=%s go build: %v\n%s", arch, err, out)
		}
	}
}

// TestTestsBuildForMacOS type-checks every package's tests for macOS: a
// contributor on a Mac runs the README's test command, so a Linux-only
// call in a test file (syscall.Pipe2, SysProcAttr.Pdeathsig) must sit
// behind a build constraint.
func TestTestsBuildForMacOS(t *testing.T) {
	gobin := goOnPath(t)
	// One cheap analyzer: vet type-checks each package with its tests first.
	cmd := exec.Command(gobin, "vet", "-unreachable", "./...")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("GOOS=darwin go vet ./...: %v\n%s", err, out)
	}
}

// goOnPath is the go command these tests build with; with CI set, its
// absence fails the test rather than skip it.
func goOnPath(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	return gobin
}
