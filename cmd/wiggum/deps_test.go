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

// TestHookEntryImports: internal/hookentry answers hooks from its init,
// before the packages it does not import are initialised (see its package
// doc). That only saves their start-up while its import closure stays free
// of them: the CLI parser, the TUI, net and net/http, html/template, the
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
	deps := goListDeps(t, "github.com/wiggum-dev/wiggum/internal/hookentry")
	for _, p := range deps {
		for _, b := range banned {
			if p == b || strings.HasPrefix(p, strings.TrimSuffix(b, "/")+"/") {
				t.Errorf("internal/hookentry's closure has %s: its init would no longer run before it", p)
			}
		}
	}
	// And it is the closure of a hook.
	for _, want := range []string{"github.com/wiggum-dev/wiggum/hooks"} {
		found := false
		for _, p := range deps {
			found = found || p == want
		}
		if !found {
			t.Errorf("internal/hookentry does not import %s", want)
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
