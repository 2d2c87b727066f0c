package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// client is one real agent CLI, pinned to the version install-clients.sh
// installs.
type client struct {
	name    string // wiggum's name for it: --agent, install --NAME, hook NAME
	pkg     string // npm package
	version string
	// env returns the environment that points the client at the fake
	// server with telemetry off, writing any config it needs under home.
	env func(t *testing.T, home, url string) []string
}

// clients must match the pins in install-clients.sh.
var clients = []client{
	{name: "claude", pkg: "@anthropic-ai/claude-code", version: "2.1.332", env: claudeEnv},
	{name: "codex", pkg: "@openai/codex", version: "0.171.0", env: codexEnv},
	{name: "gemini", pkg: "@google/gemini-cli", version: "0.61.0", env: geminiEnv},
}

// cacheDir is where install-clients.sh puts the clients.
func cacheDir() string {
	if d := os.Getenv("WIGGUM_AGENT_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "wiggum-agents")
}

// binDir returns the directory holding the client's executable. A missing
// client fails the test under CI and skips it otherwise.
func (c client) binDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(cacheDir(), strings.ReplaceAll(c.pkg, "/", "+")+"@"+c.version, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(dir, c.name)); err != nil {
		msg := fmt.Sprintf("%s %s is not installed in %s: run conformance/install-clients.sh", c.pkg, c.version, cacheDir())
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

func claudeEnv(t *testing.T, home, url string) []string {
	env := []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=sk-ant-conformance",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
	if os.Geteuid() == 0 {
		// claude refuses --dangerously-skip-permissions as root unless
		// told the machine is a sandbox; the test machine is one.
		env = append(env, "IS_SANDBOX=1")
	}
	return env
}

func codexEnv(t *testing.T, home, url string) []string {
	codexHome := filepath.Join(home, ".codex")
	config := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0
`, url)
	writeFile(t, filepath.Join(codexHome, "config.toml"), config)
	return []string{"CODEX_HOME=" + codexHome, "FAKE_OPENAI_KEY=sk-conformance"}
}

func geminiEnv(t *testing.T, home, url string) []string {
	// Without a selected auth type, GOOGLE_GEMINI_BASE_URL makes gemini
	// 0.61 pick its "gateway" auth, which headless mode rejects. One
	// attempt per request, as CLAUDE_CODE_MAX_RETRIES=0 and codex's
	// request_max_retries = 0 give the others: a scripted server error
	// ends the client's turn at once instead of after minutes of back-off.
	writeFile(t, filepath.Join(home, ".gemini", "settings.json"),
		`{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"maxAttempts":1}}`)
	return []string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=conformance"}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
