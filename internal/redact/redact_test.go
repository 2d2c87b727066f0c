package redact

import (
	"slices"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"git push https://x-access-token:ghp_SECRETSECRET1234@github.com/o/r.git HEAD:main",
			"git push https://***@github.com/o/r.git HEAD:main"},
		{"git clone https://TOKEN@gitlab.com/o/r", "git clone https://***@gitlab.com/o/r"},
		{"git remote add o 'https://u:p@ss@host:8443/r'", "git remote add o 'https://***@host:8443/r'"},
		{"curl https://api.example.com/v1?page=2&access_token=abc123&x=1",
			"curl https://api.example.com/v1?page=2&access_token=***&x=1"},
		{"echo ghp_abcdefghijklmnopqrstuvwxyz0123", "echo ghp_***"},
		{"token github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "token github_pat_***"},
		{"export OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "export OPENAI=sk-***"},
		{"xoxb-1234567890-abcdefghij", "xoxb-***"},
		{"aws AKIAIOSFODNN7EXAMPLE", "aws AKIA***"},
		{`curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc" https://x`, `curl -H "Authorization: Bearer ***" https://x`},
		{`curl -H 'Authorization: token abc' https://x`, `curl -H 'Authorization: token ***' https://x`},
		{"curl -u admin:hunter2 https://x", "curl -u admin:*** https://x"},
		{"docker login --password s3cr3t --username me", "docker login --password *** --username me"},
		{"tool --token=abc --api-key 'a b'", "tool --token=*** --api-key ***"},
		{`GITHUB_TOKEN=abc DB_PASSWORD="p w" make`, "GITHUB_TOKEN=*** DB_PASSWORD=*** make"},
		// what is not a secret is left alone
		{"git push origin HEAD:main", "git push origin HEAD:main"},
		{"git push -u origin feature", "git push -u origin feature"},
		{"mkdir -p build && go test ./... -run TestX", "mkdir -p build && go test ./... -run TestX"},
		{"go get example.com/m@v1.2.3", "go get example.com/m@v1.2.3"},
		{"git clone https://github.com/o/r@v1 && mail a@b.c", "git clone https://github.com/o/r@v1 && mail a@b.c"},
		{"the task-abcdefghijklmnopqrstuvwxyz is done", "the task-abcdefghijklmnopqrstuvwxyz is done"},
		{"docker login --password-stdin", "docker login --password-stdin"},
		{"curl https://x/?page=2", "curl https://x/?page=2"},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestStrings(t *testing.T) {
	in := []string{"claude", "--api-key", "sk-ant-abcdefghijklmnopqrstuvwxyz"}
	got := Strings(in)
	if want := []string{"claude", "--api-key", "sk-***"}; !slices.Equal(got, want) {
		t.Fatalf("Strings = %q, want %q", got, want)
	}
	if in[2] == "sk-***" {
		t.Fatal("Strings changed its argument")
	}
	plain := []string{"a", "b"}
	if got := Strings(plain); &got[0] != &plain[0] {
		t.Fatal("Strings copied a slice with nothing to hide")
	}
}

func FuzzText(f *testing.F) {
	f.Add("git push https://x:ghp_SECRETSECRET1234567890@github.com/o/r.git")
	f.Add("GITHUB_TOKEN=abc curl -u a:b -H 'Authorization: Bearer 0123456789abcdef0'")
	f.Fuzz(func(t *testing.T, s string) {
		once := Text(s)
		if again := Text(once); again != once {
			t.Fatalf("Text is not idempotent: %q -> %q -> %q", s, once, again)
		}
		if strings.Contains(s, "ghp_SECRET") && strings.Contains(once, "ghp_SECRETSECRET1234567890") {
			t.Fatalf("token left in %q", once)
		}
	})
}
