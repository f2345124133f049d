package skills_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// readmeBlock returns the fenced code block after marker in README.md.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md has no %s", marker)
	}
	_, rest, _ = strings.Cut(rest, "```")
	_, rest, _ = strings.Cut(rest, "\n") // the language tag
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// TestREADMEVerifiers keeps the documented verifiers true: the Go block
// is the code of VerifyRequest, and the Python block accepts a request
// the registry signed and refuses it on another path or with another body.
func TestREADMEVerifiers(t *testing.T) {
	src, err := os.ReadFile("verify.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range strings.SplitAfter(strings.TrimSpace(readmeBlock(t, "<!-- verifier:go -->")), "\n}\n") {
		if fn = strings.TrimSpace(fn); fn != "" && !bytes.Contains(src, []byte(fn)) {
			t.Errorf("README's Go verifier differs from verify.go:\n%s", fn)
		}
	}

	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	var (
		mu   sync.Mutex
		got  *http.Request
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got, body = r, must(io.ReadAll(r.Body))
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	s := ticketSkill(skills.ContentJSON)
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{BaseURL: srv.URL, Getenv: secrets, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Call(context.Background(), zhang, s.Name, json.RawMessage(ticketArgs)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hermes_verify.py"), []byte(readmeBlock(t, "<!-- verifier:python -->")), 0o644); err != nil {
		t.Fatal(err)
	}
	driver := `import json, sys
from hermes_verify import verify
a = json.load(sys.stdin)
seen = {}
for path, body in [(a["path"], a["body"]), ("/it/password/reset", a["body"]), (a["path"], a["body"] + " "), (a["path"], a["body"])]:
    try:
        print(verify(a["key"].encode(), "POST", a["host"], path, a["query"], body.encode(), a["headers"], a["audience"], seen)["user_id"])
    except PermissionError as e:
        print("refused:", e)
`
	headers := map[string]string{}
	for k := range got.Header {
		headers[k] = got.Header.Get(k)
	}
	in, _ := json.Marshal(map[string]any{"key": string(testKey), "host": got.Host, "path": got.URL.EscapedPath(),
		"query": got.URL.RawQuery, "body": string(body), "headers": headers, "audience": s.Name})
	cmd := exec.Command(python, "-c", driver)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want := "zhangsan\nrefused: signature invalid\nrefused: signature invalid\nrefused: nonce already used\n"
	if string(out) != want {
		t.Errorf("python verifier printed\n%s\nwant\n%s", out, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
