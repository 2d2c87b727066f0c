package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goListDeps is every package linked into pkg.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestNoGRPCOrProtobufRuntime: the wiggum binary links no gRPC, protobuf
// runtime, grpc-gateway, generated OTLP types or official OTLP exporters.
// Their package inits (descriptor registration, gRPC's balancers and
// resolvers) cost every process, each hook call included, ~1.7 ms at
// start; internal/otlp speaks OTLP without them. Tests may import them (a
// test's imports are not linked into the binary).
func TestNoGRPCOrProtobufRuntime(t *testing.T) {
	banned := []string{
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
		"google.golang.org/genproto",
		"github.com/grpc-ecosystem/",
		"go.opentelemetry.io/proto/",
		"go.opentelemetry.io/otel/exporters/",
		"golang.org/x/net/",
	}
	for _, p := range goListDeps(t, ".") {
		for _, b := range banned {
			if strings.HasPrefix(p, b) {
				t.Errorf("cmd/wiggum links %s (a %s package)", p, b)
			}
		}
	}
}

// TestHookEntryImports: internal/hookentry answers hooks (and
// internal/checkpointentry checkpoint and rollback) from its init, before
// the packages it does not import are initialised (see its package doc).
// That only saves their start-up while its import closure stays free of
// them: the CLI parser, the TUI, net and net/http, html/template, the
// OpenTelemetry SDK.
func TestHookEntryImports(t *testing.T) {
	banned := []string{
		"github.com/alecthomas/kong",
		"charm.land/",
		"github.com/charmbracelet/",
		"github.com/muesli/",
		"net",
		"net/http",
		"html/template",
		"text/template",
		"go.opentelemetry.io/",
		"github.com/wiggum-dev/wiggum/internal/cli",
		"github.com/wiggum-dev/wiggum/internal/telemetry",
		"github.com/wiggum-dev/wiggum/internal/notify",
		"github.com/wiggum-dev/wiggum/internal/proc",
	}
	for pkg, needs := range map[string]string{
		"github.com/wiggum-dev/wiggum/internal/hookentry":       "github.com/wiggum-dev/wiggum/hooks",
		"github.com/wiggum-dev/wiggum/internal/checkpointentry": "github.com/wiggum-dev/wiggum/checkpoint",
	} {
		deps := goListDeps(t, pkg)
		for _, p := range deps {
			for _, b := range banned {
				if p == b || strings.HasPrefix(p, strings.TrimSuffix(b, "/")+"/") {
					t.Errorf("%s's closure has %s: its init would no longer run before it", pkg, p)
				}
			}
		}
		// And it is the closure of what it answers.
		found := false
		for _, p := range deps {
			found = found || p == needs
		}
		if !found {
			t.Errorf("%s does not import %s", pkg, needs)
		}
	}
}

// TestHookRunsBeforeCLIInits: in the built binary, `wiggum hook claude`
// answers before net, net/http, kong, lipgloss and html/template are
// initialised (GODEBUG=inittrace=1 prints a line per package init that
// runs), and its answer is the CLI's; anything else - --help, another
// command - still initialises them and reaches the CLI.
func TestHookRunsBeforeCLIInits(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "wiggum")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	payload := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"},"cwd":"` + dir + `","session_id":"s"}`
	late := []string{"net", "net/http", "github.com/alecthomas/kong", "charm.land/lipgloss/v2", "html/template"}
	run := func(args ...string) (stdout, inits string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(payload)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String()
	}
	initialised := func(inits, pkg string) bool { return strings.Contains(inits, "init "+pkg+" @") }

	early, inits := run("hook", "claude", "--guard", "always")
	for _, p := range late {
		if initialised(inits, p) {
			t.Errorf("wiggum hook claude initialised %s before answering", p)
		}
	}
	if !initialised(inits, "github.com/wiggum-dev/wiggum/hooks") {
		t.Fatalf("no init trace for the hooks package; GODEBUG=inittrace=1 output:\n%s", inits)
	}
	if !strings.Contains(early, `"permissionDecision":"deny"`) {
		t.Errorf("the guard did not deny a force push: %q", early)
	}
	// The same hook through the CLI (a global flag before "hook" is not
	// the form install writes) gives the same answer.
	viaCLI, inits := run("-C", dir, "hook", "claude", "--guard", "always")
	if !initialised(inits, "github.com/alecthomas/kong") {
		t.Errorf("wiggum -C DIR hook claude did not go through the CLI")
	}
	if viaCLI != early {
		t.Errorf("the hook answers differently through the CLI:\nearly: %s\nCLI:   %s", early, viaCLI)
	}
	for _, args := range [][]string{{"hook", "claude", "--help"}, {"hook", "git", "post-commit"}, {"status"}} {
		if _, inits := run(args...); !initialised(inits, "github.com/alecthomas/kong") {
			t.Errorf("wiggum %s did not reach the CLI", strings.Join(args, " "))
		}
	}
}

// TestCheckpointRunsBeforeCLIInits: in the built binary, the plain
// `wiggum checkpoint` and `wiggum rollback` a loop runs answer before kong,
// net and the TUI are initialised, with the CLI's output and exit codes;
// global flags or --help still reach the CLI.
func TestCheckpointRunsBeforeCLIInits(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "wiggum")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GODEBUG=inittrace=1", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	sh := func(script string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	sh("git init -q -b main && echo a > a.txt && git add a.txt && git commit -q -m init")
	run := func(args ...string) (stdout string, code int, inits string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code = cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatal(err)
		}
		return out.String(), code, errb.String()
	}
	initialised := func(inits, pkg string) bool { return strings.Contains(inits, "init "+pkg+" @") }
	late := []string{"net", "github.com/alecthomas/kong", "charm.land/lipgloss/v2", "html/template"}
	early := func(args ...string) (string, int) {
		t.Helper()
		out, code, inits := run(args...)
		if !initialised(inits, "github.com/wiggum-dev/wiggum/checkpoint") {
			t.Fatalf("no init trace for the checkpoint package:\n%s", inits)
		}
		for _, p := range late {
			if initialised(inits, p) {
				t.Errorf("wiggum %s initialised %s before answering", strings.Join(args, " "), p)
			}
		}
		return out, code
	}
	viaCLI := func(args ...string) (string, int) {
		t.Helper()
		out, code, inits := run(append([]string{"-C", dir}, args...)...)
		if !initialised(inits, "github.com/alecthomas/kong") {
			t.Errorf("wiggum -C DIR %s did not go through the CLI", strings.Join(args, " "))
		}
		return out, code
	}

	// The same command both ways: same output, same exit code.
	sh("echo dirty >> a.txt")
	out, code := early("checkpoint", "--json")
	cli, cliCode := viaCLI("checkpoint", "--json")
	if code != 0 || cliCode != 0 || !strings.Contains(out, `"snapshot"`) || !strings.Contains(cli, `"snapshot"`) {
		t.Fatalf("checkpoint --json: %d %q / CLI %d %q", code, out, cliCode, cli)
	}
	sh("git commit -qam agent && echo new > b.txt")
	out, code = early("rollback", "--dry-run", "--reason", "tests failed")
	cli, cliCode = viaCLI("rollback", "--dry-run", "--reason", "tests failed")
	if out != cli || code != cliCode {
		t.Errorf("rollback --dry-run differs:\nearly (%d): %s\nCLI (%d): %s", code, out, cliCode, cli)
	}
	// Outside a session, with the journal off, the agent's commit is
	// discarded after saving it; a second rollback has nothing to do.
	out, code = early("rollback", "--reason=tests failed")
	if code != 0 || !strings.Contains(out, "rolled back to") {
		t.Fatalf("rollback: %d %q", code, out)
	}
	out, code = early("rollback")
	cli, cliCode = viaCLI("rollback")
	if out != cli || code != cliCode || !strings.Contains(out, "nothing to roll back") {
		t.Errorf("second rollback:\nearly (%d): %s\nCLI (%d): %s", code, out, cliCode, cli)
	}
	// A refusal is exit 4 both ways: the checkpoint is no longer an
	// ancestor after history is rewritten.
	sh("echo x > c.txt && git add c.txt && git commit -q -m c")
	if _, code = early("checkpoint"); code != 0 {
		t.Fatalf("checkpoint: exit %d", code)
	}
	sh("git reset -q --hard HEAD~1 && git commit -q --allow-empty -m rewritten")
	if _, code = early("rollback"); code != 4 {
		t.Errorf("rollback past rewritten history: exit %d, want 4", code)
	}
	if _, cliCode = viaCLI("rollback"); cliCode != 4 {
		t.Errorf("the CLI's rollback past rewritten history: exit %d, want 4", cliCode)
	}
	// Anything but the plain forms reaches the CLI.
	for _, args := range [][]string{{"checkpoint", "--help"}, {"rollback", "--json=true"}, {"rollback", "--bogus"}, {"rollback", "--json", "--json"}} {
		if _, _, inits := run(args...); !initialised(inits, "github.com/alecthomas/kong") {
			t.Errorf("wiggum %s did not reach the CLI", strings.Join(args, " "))
		}
	}
}
