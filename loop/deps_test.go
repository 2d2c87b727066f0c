package loop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// depDirsOf names the outermost directory of installed packages or of a
// cache that staged paths are in, from their names and their marker
// files, and nothing else.
func TestDepDirsOf(t *testing.T) {
	root := t.TempDir()
	// A symlink to a system program is no build.
	if err := os.Symlink("/bin/sh", filepath.Join(root, "python")); err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{
		"target/CACHEDIR.TAG":    "Signature: 8a477f597d28d172789f06886806bc55\n",
		"fake/CACHEDIR.TAG":      "Signature: 0000\n",
		"short/CACHEDIR.TAG":     "Sig",
		"tools/.venv/pyvenv.cfg": "home = /usr/bin\n",
		"certs/server.key":       "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n",
		"certs/cert.pem":         "-----BEGIN CERTIFICATE-----\nMIIE\n",
		"certs/ca.key":           "not a key\n",
		"myapp":                  "\x7fELF\x02\x01\x01\x00",
		"build/main.o":           "\x7fELF\x02\x01\x01\x01",
		"bin/tool.exe":           "MZ" + strings.Repeat("\x00", 0x3a) + "\x40\x00\x00\x00PE\x00\x00",
		"docs/MZ.txt":            "MZ is how this starts" + strings.Repeat(" ", 60),
		"out/App.class":          "\xca\xfe\xba\xbe\x00\x00\x00\x41",
		"mac/app":                "\xcf\xfa\xed\xfe\x07\x00\x00\x01",
		"node_modules/a/b.node":  "\x7fELF",
		"run.sh":                 "#!/bin/sh\necho\n",
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := depDirsOf(root, []string{
		"app.js", "node_modules/a/index.js", "node_modules/a/node_modules/b/index.js",
		"packages/web/node_modules/c/x.js", "src/pkg/__pycache__/m.pyc", "src/node_modules.js",
		"target/CACHEDIR.TAG", "target/debug/app", "fake/CACHEDIR.TAG", "short/CACHEDIR.TAG",
		"tools/.venv/bin/python", "tools/.venv/pyvenv.cfg", "tools/.venv/lib/site-packages/x/__pycache__/y.pyc",
		"pyvenv.cfg", "CACHEDIR.TAG", "web/.next/server/app.js", "web/.next/cache/x", "docs/next/page.md",
		".env", ".env.local", ".env.example", "apps/api/.env.production", "apps/api/.env.Sample", ".envrc", ".environment",
		"id_ed25519", "id_ed25519.pub", "certs/server.key", "certs/cert.pem", "certs/ca.key", "node_modules/a/.env",
		"myapp", "build/main.o", "bin/tool.exe", "docs/MZ.txt", "out/App.class", "mac/app", "node_modules/a/b.node", "run.sh", "python",
		"coverage/lcov.info", "coverage/lcov-report/index.html", "src/coverage/report.go", "web/.nyc_output/x.json", "htmlcov/index.html",
		"src/app.egg-info/PKG-INFO", "x.egg-info.md", ".coverage", ".coverage.host.1234", ".coveragerc",
		".plan.md.swp", "src/.main.go.swo", "notes.md~", ".#plan.md", "#plan.md#", ".doc.txt.kate-swp",
		".swp", "file.swap", "a.swz", "~", "##", "c#",
	})
	want := []depDir{
		{Path: "#plan.md#", Rule: "/#plan.md#", File: true},
		{Path: ".#plan.md", Rule: "/.#plan.md", File: true},
		{Path: ".coverage", Rule: "/.coverage", File: true},
		{Path: ".coverage.host.1234", Rule: "/.coverage.host.1234", File: true},
		{Path: ".doc.txt.kate-swp", Rule: "/.doc.txt.kate-swp", File: true},
		{Path: ".env", Rule: "/.env", File: true},
		{Path: ".env.local", Rule: "/.env.local", File: true},
		{Path: ".envrc", Rule: "/.envrc", File: true},
		{Path: ".plan.md.swp", Rule: "/.plan.md.swp", File: true},
		{Path: "apps/api/.env.production", Rule: "/apps/api/.env.production", File: true},
		{Path: "bin/tool.exe", Rule: "/bin/tool.exe", File: true},
		{Path: "build/main.o", Rule: "/build/main.o", File: true},
		{Path: "certs/server.key", Rule: "/certs/server.key", File: true},
		{Path: "coverage", Rule: "/coverage/"},
		{Path: "htmlcov", Rule: "/htmlcov/"},
		{Path: "id_ed25519", Rule: "/id_ed25519", File: true},
		{Path: "mac/app", Rule: "/mac/app", File: true},
		{Path: "myapp", Rule: "/myapp", File: true},
		{Path: "node_modules", Rule: "/node_modules/"},
		{Path: "notes.md~", Rule: "/notes.md~", File: true},
		{Path: "out/App.class", Rule: "/out/App.class", File: true},
		{Path: "packages/web/node_modules", Rule: "/packages/web/node_modules/"},
		{Path: "src/.main.go.swo", Rule: "/src/.main.go.swo", File: true},
		{Path: "src/app.egg-info", Rule: "/src/app.egg-info/"},
		{Path: "src/pkg/__pycache__", Rule: "__pycache__/"},
		{Path: "target", Rule: "/target/"},
		{Path: "tools/.venv", Rule: "/tools/.venv/"},
		{Path: "web/.next", Rule: "/web/.next/"},
		{Path: "web/.nyc_output", Rule: "/web/.nyc_output/"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Rule != want[i].Rule || got[i].File != want[i].File || got[i].What == "" {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := under(got, "node_modules/a/index.js"); d == nil || d.Path != "node_modules" {
		t.Errorf("under: %+v", d)
	}
	if d := under(got, "src/node_modules.js"); d != nil {
		t.Errorf("under: %+v", d)
	}
	if d := under(got, ".env"); d == nil || d.Path != ".env" {
		t.Errorf("under: %+v", d)
	}
	if d := under(got, ".env/x"); d != nil {
		t.Errorf("under: %+v", d)
	}
}

// Workers commit at once, and each may exclude directories of its own:
// every rule reaches .git/info/exclude, none lost to another's write.
func TestExcludeDepsConcurrent(t *testing.T) {
	common := t.TempDir()
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := depDir{Path: fmt.Sprintf("w%d/node_modules", i), Rule: fmt.Sprintf("/w%d/node_modules/", i)}
			if err := excludeDeps(common, []depDir{d}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(common, "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if rule := fmt.Sprintf("/w%d/node_modules/\n", i); !strings.Contains(string(data), rule) {
			t.Errorf("%q lost:\n%s", rule, data)
		}
	}
}
