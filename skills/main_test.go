package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-gw/hermes/skills"
)

// helperArg makes the test binary act as a helper program instead of
// running tests: command skills and the stdio MCP server re-exec it, so the
// tests need no compiler and no shell.
const helperArg = "hermes-test-helper"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		os.Exit(runHelper(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// unsigned marks test skills that do not care about signing as
// identity: none, which a skill without a key must say to load.
func unsigned(defs ...*skills.Skill) []*skills.Skill {
	for _, d := range defs {
		if d.Identity == (skills.IdentityConfig{}) {
			d.Identity.None = true
		}
	}
	return defs
}

// testBinary is the absolute path of this test binary, for allow-lists.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// serverURL starts h on a test server and returns its URL.
func serverURL(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// helperReport is what the "echo" helper prints: everything the program
// received, so tests can assert argv, environment and stdin.
type helperReport struct {
	Argv  []string          `json:"argv"`
	Env   map[string]string `json:"env"`
	Stdin string            `json:"stdin"`
}

func runHelper(mode string, args []string) int {
	switch mode {
	case "echo":
		stdin, _ := io.ReadAll(os.Stdin)
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		json.NewEncoder(os.Stdout).Encode(helperReport{Argv: args, Env: env, Stdin: string(stdin)})
		return 0
	case "sleep":
		time.Sleep(time.Minute) // killed by the skill's timeout long before
		return 0
	case "flood":
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 1
			}
		}
	case "exit":
		code, _ := strconv.Atoi(args[0])
		fmt.Fprintln(os.Stderr, strings.Join(args[1:], " "))
		return code
	case "mcp-stdio":
		return runStdioMCP([]byte(args[0]))
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// whoamiServer is an MCP server with one tool, "whoami", answering with
// the caller it verified from _meta (and, over HTTP, from the headers).
func whoamiServer(key []byte, now func() time.Time, seen func(*mcp.CallToolRequest)) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	nonces := skills.NewNonceCache()
	srv.AddTool(&mcp.Tool{Name: "whoami", Description: "who is asking", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if seen != nil {
				seen(req)
			}
			id, err := skills.VerifyMeta(req.Params.Meta, req.Params.Name, req.Params.Arguments, key,
				skills.VerifyOptions{Audience: "hr_whoami", Now: now(), Nonces: nonces})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + err.Error()}}}, nil
			}
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if who, _ := args["employee_id"].(string); who != "" && who != id.UserID {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "only your own data"}}}, nil
			}
			return &mcp.CallToolResult{StructuredContent: map[string]any{"user_id": id.UserID, "corp_id": id.CorpID,
				"args": args, "traceparent": req.Params.Meta[skills.MetaKeyTraceparent]}}, nil
		})
	return srv
}

func runStdioMCP(key []byte) int {
	srv := whoamiServer(key, time.Now, nil)
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
