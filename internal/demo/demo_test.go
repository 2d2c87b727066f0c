package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetupAndGate(t *testing.T) {
	dir, err := Setup(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", dir, "log", "--format=%s").Output()
	if err != nil || strings.TrimSpace(string(out)) != "demo: plan with three stories" {
		t.Fatalf("log %q %v", out, err)
	}
	var b bytes.Buffer
	if code := Test(&b, dir); code != 0 || b.Len() != 0 {
		t.Errorf("empty project: code %d output %q", code, b.String())
	}
	if err := writeGreeting(dir, "en.txt", "HELLO!!"); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if code := Test(&b, dir); code != 1 || !strings.Contains(b.String(), `FAIL greetings/en.txt: want "hello", got "HELLO!!"`) {
		t.Errorf("broken greeting: code %d output %q", code, b.String())
	}
}

func TestAgentFollowsItsPrompt(t *testing.T) {
	dir, err := Setup(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WIGGUM_STORY", "US-3")
	var b bytes.Buffer
	if code := Agent(strings.NewReader("first attempt"), &b, dir); code != 0 {
		t.Fatalf("agent: %d %s", code, b.String())
	}
	en, _ := os.ReadFile(filepath.Join(dir, "greetings", "en.txt"))
	if strings.TrimSpace(string(en)) != "HELLO!!" {
		t.Errorf("first attempt should break en.txt, got %q", en)
	}
	if err := os.Remove(filepath.Join(dir, "greetings", "en.txt")); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if code := Agent(strings.NewReader("## The previous attempt at this story failed"), &b, dir); code != 0 {
		t.Fatalf("retry: %d %s", code, b.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "greetings", "en.txt")); !os.IsNotExist(err) {
		t.Errorf("retry touched en.txt: %v", err)
	}
	b.Reset()
	if code := Test(&b, dir); code != 0 {
		t.Errorf("gate after retry: %s", b.String())
	}
}
