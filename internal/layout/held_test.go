package layout

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHoldHelper, run as a child with WIGGUM_TEST_HOLD set, flocks that
// file (as a killed run's agent supervisor does, with no holder record)
// and holds it until its stdin closes.
func TestHoldHelper(t *testing.T) {
	path := os.Getenv("WIGGUM_TEST_HOLD")
	if path == "" {
		t.Skip("a helper process")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	var b [1]byte
	os.Stdin.Read(b[:])
}

// A holder with no record says who it is: a wiggum process (the same
// executable) is a killed run's supervisor, not "perhaps a bash loop";
// anything else may well be the bash loop.
func TestHeldWithoutRecordNamesTheHolder(t *testing.T) {
	for _, c := range []struct {
		name string
		argv []string
		want string
	}{
		{"wiggum", []string{os.Args[0], "-test.run=^TestHoldHelper$"}, "(a wiggum process whose holder record is gone: a killed run's agent supervisor keeps the lock until its agent has exited)"},
		{"bash loop", []string{"sh", "-c", "exec 9>\"$WIGGUM_TEST_HOLD\" && flock 9 && echo held && read x"}, "(no wiggum holder record: perhaps a bash ralph loop)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "bash loop" {
				if _, err := exec.LookPath("flock"); err != nil {
					if os.Getenv("CI") != "" {
						t.Fatal("flock (util-linux) is not installed")
					}
					t.Skip("flock (util-linux) is not installed")
				}
			}
			root := t.TempDir()
			tr := At(root)
			if err := os.MkdirAll(filepath.Join(root, StateDir), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Env = append(os.Environ(), "WIGGUM_TEST_HOLD="+tr.Path(LockFile))
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { in.Close(); _ = cmd.Wait() }()
			var b [5]byte
			if n, _ := out.Read(b[:]); string(b[:n]) != "held\n" {
				t.Fatalf("the helper did not take the lock: %q", b[:n])
			}
			start := time.Now()
			_, err := tr.Acquire(context.Background(), AcquireOptions{})
			var held *HeldError
			if !errors.As(err, &held) {
				t.Fatalf("acquire: %v, want a HeldError", err)
			}
			if held.PID != cmd.Process.Pid && c.name == "wiggum" {
				t.Fatalf("PID %d, want %d", held.PID, cmd.Process.Pid)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "wait for it to finish (wiggum status shows it), then run again") {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
			t.Logf("%s (after %v)", err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// After a reboot, a killed run's holder record may name a pid that now
// belongs to an unrelated live process, while someone else (a bash loop)
// holds the lock. The record is not the holder's: CurrentHolder (status)
// drops it, and its session token is no one's (hunt12 #2).
func TestStaleRecordWithAReusedPIDIsNotTheHolder(t *testing.T) {
	root := t.TempDir()
	tr := At(root)
	if err := os.MkdirAll(filepath.Join(root, StateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	reused := exec.Command("sleep", "60")
	if err := reused.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reused.Process.Kill(); _ = reused.Wait() }()
	if err := os.WriteFile(tr.Path(HolderFile), []byte(`{"pid":`+strconv.Itoa(reused.Process.Pid)+`,"host":"h","started":"2026-01-01T00:00:00Z","session":"dead-run","command":["wiggum","run"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldHelper$")
	cmd.Env = append(os.Environ(), "WIGGUM_TEST_HOLD="+tr.Path(LockFile))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	var b [5]byte
	if n, _ := out.Read(b[:]); string(b[:n]) != "held\n" {
		t.Fatalf("the helper did not take the lock: %q", b[:n])
	}
	if tr.LockPID() != cmd.Process.Pid {
		t.Skip("/proc/locks does not name the holder here")
	}
	h, err := tr.CurrentHolder()
	if err != nil || h != nil {
		t.Fatalf("CurrentHolder: %+v %v, want none: the record's pid %d is not the lock's holder %d", h, err, reused.Process.Pid, cmd.Process.Pid)
	}
	t.Setenv(SessionEnv, "dead-run")
	if _, ok := tr.InSession(); ok {
		t.Fatal("the dead run's session token is taken for the live holder's")
	}
}
