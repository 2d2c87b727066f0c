package watch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkFirstFrame times what `wiggum watch` does before its first
// frame on the log of a 1,000-story, 8-worker run - read and fold the log,
// draw the view - against the least any reader does: decode every line.
// bench/watch.sh runs it; compare the two in the same run.
func BenchmarkFirstFrame(b *testing.B) {
	root := b.TempDir()
	path := filepath.Join(root, filepath.FromSlash(EventLog))
	writeBenchLog(b, path, 1000, 8)
	b.Run("decode-only", func(b *testing.B) {
		for range b.N {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var m map[string]any
				_ = json.Unmarshal(sc.Bytes(), &m)
			}
			f.Close()
		}
	})
	b.Run("watch", func(b *testing.B) {
		for range b.N {
			src := NewSource(root)
			m := NewModel(src, time.Second, func(int) bool { return true })
			if v := m.Render(); !strings.Contains(v, "1000/1000 stories done") {
				b.Fatalf("first frame:\n%s", v)
			}
			src.Close()
		}
	})
}

func writeBenchLog(b *testing.B, path string, n, workers int) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	t := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	write := func(name string, fields map[string]any) {
		t = t.Add(700 * time.Millisecond)
		fields["event"], fields["time"], fields["session"] = name, t.Format(time.RFC3339Nano), "0123456789abcdef"
		line, _ := json.Marshal(fields)
		sb.Write(line)
		sb.WriteByte('\n')
	}
	write("run_start", map[string]any{"plan": "plan.md", "pid": 1, "workers": workers, "stories": n, "done": 0})
	for s := 1; s <= n; s++ {
		id := fmt.Sprintf("US-%d", s)
		w := s%workers + 1
		write("iteration_start", map[string]any{"iteration": s, "story": id, "title": "story " + id, "attempt": 1, "attempts": 3, "worker": w, "output": fmt.Sprintf(".ralph/wiggum/agent/%d.log", s)})
		for k := 1; k <= 3; k++ {
			write("tool", map[string]any{"story": id, "iteration": s, "worker": w, "tool": "Bash: go test ./...", "input_tokens": 12000 * k, "output_tokens": 300 * k})
		}
		write("iteration_end", map[string]any{"iteration": s, "story": id, "attempt": 1, "worker": w, "outcome": "done", "duration_ms": 61000, "cost_usd": 0.42, "commit": "abcdef1"})
		write("merged", map[string]any{"story": id, "branch": "refs/heads/wiggum/" + id, "commit": "abcdef1234567890"})
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}
