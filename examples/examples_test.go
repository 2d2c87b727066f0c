// Package examples holds launchers for fleets of wiggum runs (a GitHub
// Actions matrix, a Kubernetes indexed Job); its test parses them and checks
// that each starts several machines on one shared remote.
package examples

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func load(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s is not valid YAML: %v", path, err)
	}
	return doc
}

// at walks doc by keys (map keys or list indexes given as ints).
func at(t *testing.T, doc any, path ...any) any {
	t.Helper()
	cur := doc
	for i, k := range path {
		switch key := k.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping at %v", path, path[:i])
			}
			if cur, ok = m[key]; !ok {
				t.Fatalf("missing %v", path[:i+1])
			}
		case int:
			l, ok := cur.([]any)
			if !ok || key >= len(l) {
				t.Fatalf("%v: no item %d at %v", path, key, path[:i])
			}
			cur = l[key]
		}
	}
	return cur
}

// checkRun checks a shell script starts a shared run on origin with a
// valid wiggum command line.
func checkRun(t *testing.T, script string) {
	t.Helper()
	var line string
	for _, l := range strings.Split(strings.ReplaceAll(script, "\\\n", " "), "\n") {
		if strings.Contains(l, "wiggum run ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no wiggum run in:\n%s", script)
	}
	for _, want := range []string{"--remote origin", "--workers"} {
		if !strings.Contains(line, want) {
			t.Errorf("wiggum run without %s: %s", want, line)
		}
	}
	if !strings.Contains(line, "--plan") && !strings.Contains(line, "--prd") {
		t.Errorf("wiggum run names no plan: %s", line)
	}
}

func TestGitHubActionsMatrix(t *testing.T) {
	doc := load(t, "github-actions/wiggum-fleet.yml")
	if at(t, doc, "permissions", "contents") != "write" {
		t.Error("the jobs cannot push: permissions.contents must be write")
	}
	if _, ok := at(t, doc, "on").(map[string]any)["workflow_dispatch"]; !ok {
		t.Error("no workflow_dispatch trigger")
	}
	job := at(t, doc, "jobs", "run")
	machines, _ := at(t, job, "strategy", "matrix", "machine").([]any)
	if len(machines) < 2 {
		t.Errorf("matrix of %d machines; a fleet needs several", len(machines))
	}
	if at(t, job, "strategy", "fail-fast") != false {
		t.Error("fail-fast would cancel the other machines when one fails")
	}
	steps, _ := at(t, job, "steps").([]any)
	var checkout, run bool
	for _, s := range steps {
		step := s.(map[string]any)
		if uses, _ := step["uses"].(string); strings.HasPrefix(uses, "actions/checkout@") {
			checkout = true
			if at(t, step, "with", "fetch-depth") != 0 {
				t.Error("checkout must fetch the whole history (fetch-depth: 0)")
			}
		}
		if script, _ := step["run"].(string); strings.Contains(script, "wiggum run ") {
			run = true
			checkRun(t, script)
		}
	}
	if !checkout || !run {
		t.Errorf("steps: checkout %v, wiggum run %v", checkout, run)
	}
}

func TestKubernetesIndexedJob(t *testing.T) {
	doc := load(t, "kubernetes/wiggum-fleet-job.yaml")
	if at(t, doc, "apiVersion") != "batch/v1" || at(t, doc, "kind") != "Job" {
		t.Fatalf("not a batch/v1 Job: %v %v", doc["apiVersion"], doc["kind"])
	}
	spec := at(t, doc, "spec")
	if at(t, spec, "completionMode") != "Indexed" {
		t.Error("not an indexed Job")
	}
	n, _ := at(t, spec, "completions").(int)
	p, _ := at(t, spec, "parallelism").(int)
	if n < 2 || p != n {
		t.Errorf("completions %d, parallelism %d: all machines should run at once", n, p)
	}
	if rp := at(t, spec, "template", "spec", "restartPolicy"); rp != "Never" && rp != "OnFailure" {
		t.Errorf("restartPolicy %v is not allowed for a Job", rp)
	}
	c := at(t, spec, "template", "spec", "containers", 0)
	if img, _ := at(t, c, "image").(string); img == "" {
		t.Error("no image")
	}
	args, _ := at(t, c, "args").([]any)
	if len(args) == 0 {
		t.Fatal("no args")
	}
	script, _ := args[len(args)-1].(string)
	checkRun(t, script)
	if !strings.Contains(script, "git clone") {
		t.Error("each pod needs its own clone")
	}
}
