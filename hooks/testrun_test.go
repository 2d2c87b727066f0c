package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures are real outputs of the runners (go test, pytest, bats,
// rspec, cargo test, make, jest, vitest, mocha, npm test, node --test),
// generated on this
// machine from tiny suites. Every *_pass fixture prints a decoy ("FAIL is
// just text", "  1 failing", "Failures: none") from inside a passing test.
func TestClassifyRealRunnerOutput(t *testing.T) {
	files, err := filepath.Glob("testdata/testruns/*.txt")
	if err != nil || len(files) < 20 {
		t.Fatalf("fixtures: %v (%d)", err, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		want := Passed
		if strings.Contains(name, "_fail") {
			want = Failed
		}
		// -1: the agent gave no exit code (Cursor); 0: the command
		// "succeeded" because its output went through tee.
		for _, code := range []int{-1, 0} {
			if got := Classify(string(data), code); got != want {
				t.Errorf("%s (exit %d): got %s, want %s", name, code, got, want)
			}
		}
		if got := Classify(string(data), 1); got != Failed {
			t.Errorf("%s with exit 1: got %s", name, got)
		}
	}
}

func TestClassifyWithoutSummary(t *testing.T) {
	if got := Classify("compiling...\n", -1); got != Unknown {
		t.Errorf("no summary, no exit code: %s", got)
	}
	if got := Classify("", 0); got != Passed {
		t.Errorf("exit 0 and no failure: %s", got)
	}
	if got := Classify("  1 failing\n", -1); got != Unknown {
		t.Errorf("a lone mocha-looking line is not a summary: %s", got)
	}
	if got := Classify("# fail 1\nℹ fail 1\n", -1); got != Unknown {
		t.Errorf("a fail count not right after node's pass count is no summary: %s", got)
	}
	if got := Classify("\x1b[34mℹ pass 0\x1b[39m\n\x1b[34mℹ fail 2\x1b[39m\n", 0); got != Failed {
		t.Errorf("colored node spec summary: %s", got)
	}
	colored := "\x1b[31m--- FAIL: TestX (0.00s)\x1b[0m\n"
	if got := Classify(colored, 0); got != Failed {
		t.Errorf("colored go failure: %s", got)
	}
}

func TestTestRunner(t *testing.T) {
	cases := map[string]string{
		"go test ./...": "go test",
		"cd src && go test -race ./... 2>&1 | tee x": "go test",
		"go build ./...":                 "",
		"pytest -q":                      "pytest",
		"python3 -m pytest tests/":       "python -m pytest",
		"python -m unittest discover":    "python -m unittest",
		"poetry run pytest":              "pytest",
		"uv run pytest -x":               "pytest",
		"npx jest --ci":                  "jest",
		"npx vitest run":                 "vitest",
		"npm test":                       "npm test",
		"npm run test:unit":              "npm run test:unit",
		"yarn test":                      "yarn test",
		"pnpm test -- --watch=false":     "pnpm test",
		"pnpm run lint":                  "",
		"cargo test --all":               "cargo test",
		"cargo build":                    "",
		"bundle exec rspec spec/":        "rspec",
		"rspec":                          "rspec",
		"bats test/":                     "bats",
		"make test":                      "make test",
		"make -j4 check":                 "make check",
		"make build":                     "",
		"timeout 300 go test ./...":      "go test",
		"CGO_ENABLED=0 go test ./...":    "go test",
		"env -i PATH=/bin go test ./...": "go test",
		"bash -c 'go test ./...'":        "go test",
		"mocha test/*.js":                "mocha",
		"echo go test":                   "",
		// Options before the subcommand, with values: the monorepo forms.
		"npm --prefix web test":                       "npm test",
		"npm -w web test":                             "npm test",
		"npm --workspace=web test":                    "npm test",
		"npm --workspace web run test:unit":           "npm run test:unit",
		"npm --loglevel silent test":                  "npm test",
		"pnpm --filter web test":                      "pnpm test",
		"pnpm -C web test":                            "pnpm test",
		"pnpm -r test":                                "pnpm test",
		"yarn --cwd web test":                         "yarn test",
		"yarn workspace web test":                     "yarn test",
		"yarn workspaces foreach -A run test":         "yarn run test",
		"bun --cwd web test":                          "bun test",
		"go -C sub test ./...":                        "go test",
		"cargo --manifest-path sub/Cargo.toml test":   "cargo test",
		"cargo +nightly test":                         "cargo test",
		"cargo -Z unstable-options -C sub test":       "cargo test",
		"uv run --directory sub pytest":               "pytest",
		"uv run --with pytest-xdist pytest -n 4":      "pytest",
		"poetry -C sub run pytest":                    "pytest",
		"npm --prefix web run build":                  "",
		"go -C test build ./...":                      "",
		"pnpm --filter test build":                    "",
		"cargo --manifest-path test/Cargo.toml build": "",
		"git commit -m 'make test pass'":              "",
		"mvn -q test":                                 "mvn test",
		"./gradlew test":                              "gradlew test",
		"dotnet test":                                 "dotnet test",
		"go test ./... \"unterminated":                "go test",
		"grep -r 'pytest' .":                          "",
		"ls && npm run build && npm test 2>&1 | tail": "npm test",
		// Runners and forms that are neither a package script nor a
		// known binary's name alone.
		"node --test":                      "node --test",
		"node --test test/x.test.js":       "node --test",
		"node --test-reporter=spec --test": "node --test",
		"node --test-only a.test.js":       "node --test",
		"node server.js":                   "",
		"npx playwright test":              "playwright test",
		"npx playwright install":           "",
		"bun run test":                     "bun run test",
		"bun run build":                    "",
		"bun test":                         "bun test",
		"pnpm vitest":                      "vitest",
		"pnpm vitest run":                  "vitest",
		"pnpm exec jest":                   "jest",
		"pnpm dlx vitest run":              "vitest",
		"npm exec -- jest":                 "jest",
		"pnpm eslint .":                    "",
		"yarn jest":                        "jest",
		"bazel test //...":                 "bazel test",
		"bazel build //...":                "",
		"turbo run test":                   "turbo run test",
		"turbo test":                       "turbo test",
		"turbo run lint test":              "turbo run test",
		"turbo run build":                  "",
		"nx test app":                      "nx test",
		"nx affected -t test":              "nx test",
		"nx run-many --target=test":        "nx test",
		"nx run app:test":                  "nx test",
		"nx build app":                     "",
		"nx affected -t lint":              "",
		"busted":                           "busted",
	}
	for cmd, want := range cases {
		if got := TestRunner(cmd); got != want {
			t.Errorf("TestRunner(%q) = %q, want %q", cmd, got, want)
		}
	}
}

func BenchmarkClassify1000Lines(b *testing.B) {
	var sb strings.Builder
	for i := range 333 {
		sb.WriteString("=== RUN   TestThing")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString("\n    thing_test.go:12: checking the thing works as intended\n--- PASS: TestThing (0.00s)\n")
	}
	sb.WriteString("PASS\nok  \texample.com/thing\t0.123s\n")
	out := sb.String()
	for b.Loop() {
		Classify(out, 0)
	}
}
