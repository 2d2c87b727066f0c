package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wiggum-dev/wiggum/conformance/fakemodel"
)

// TestOtherProjectsTestRunKeepsTheWork: a real client's agent that runs a
// sibling project's failing tests (cd ../lib && npm test) keeps its work in
// the session's tree; the model is told the failure was not this tree's
// and nothing was rolled back.
func TestOtherProjectsTestRunKeepsTheWork(t *testing.T) {
	forClients(t, []string{"claude"}, func(t *testing.T, c client) {
		w := newWorld(t, c)
		lib := filepath.Join(filepath.Dir(w.dir), "lib")
		writeFile(t, filepath.Join(lib, "package.json"), `{"name": "lib", "private": true, "scripts": {"test": "node --test"}}`+"\n")
		writeFile(t, filepath.Join(lib, "lib.test.js"), failingTest)
		w.srv.Script(fakemodel.Turn{Shell: "echo attempt > attempt.txt && cd " + lib + " && npm test"}, fakemodel.Turn{Text: "done"})
		w.run(0)
		if b := w.backups(); len(b) != 0 {
			t.Fatalf("the session's tree was rolled back for another project's tests: %v", b)
		}
		if _, err := os.Stat(filepath.Join(w.dir, "attempt.txt")); err != nil {
			t.Fatalf("the attempt's work is gone: %v", err)
		}
		if !hasText(w.turnRequest(1).Body, "Nothing was rolled back: the tests ran in "+lib) {
			t.Fatalf("the model's next request does not say why nothing was rolled back:\n%.3000s", w.turnRequest(1).Body)
		}
	})
}
