package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// commandSkill runs the test binary as a helper in the given mode.
func commandSkill(t *testing.T, mode string, argv ...string) *skills.Skill {
	return &skills.Skill{
		Name: "vpn_status", Description: "VPN status of a ticket", Executor: skills.ExecutorCommand,
		Parameters: json.RawMessage(`{"type":"object","properties":{"ticket_id":{"type":"string"}},"required":["ticket_id"]}`),
		Command:    &skills.CommandConfig{Path: testBinary(t), Argv: append([]string{"hermes-test-helper", mode}, argv...)},
		Identity:   skills.IdentityConfig{HMACKeyEnv: "HR_HMAC"},
		Confirm:    &skills.ConfirmPolicy{},
	}
}

func commandRegistry(t *testing.T, s *skills.Skill) *skills.Registry {
	t.Helper()
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{CommandAllowList: []string{testBinary(t)},
		Getenv: secrets, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return reg
}

func TestCommand_NoShellIdentityInEnv(t *testing.T) {
	s := commandSkill(t, "echo", "--user={{.Caller.UserID}}", "{{.Args.ticket_id}}")
	s.Auth = &skills.Auth{Type: skills.AuthBearer, TokenEnv: "HR_TOKEN"}
	t.Setenv("HERMES_TEST_PARENT_SECRET", "model-api-key")
	reg := commandRegistry(t, s)
	// Shell syntax in an argument must arrive as one literal argument.
	evil := `INC-1; rm -rf / $(id) "q"`
	res, err := reg.Call(context.Background(), zhang, "vpn_status", json.RawMessage(`{"ticket_id":`+quote(evil)+`}`))
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	var got helperReport
	if err := json.Unmarshal(res.Body, &got); err != nil || res.ContentType != skills.ContentJSON {
		t.Fatalf("body %q (%s): %v", res.Body, res.ContentType, err)
	}
	if want := []string{"--user=zhangsan", "--", evil}; strings.Join(got.Argv, "|") != strings.Join(want, "|") {
		t.Errorf("argv = %q, want %q", got.Argv, want)
	}
	for k, want := range map[string]string{"HERMES_USER_ID": "zhangsan", "HERMES_CORP_ID": "ww123", "HERMES_CHAT_ID": "chat-9",
		"HERMES_REQUEST_ID": "run-42", "HERMES_USER_NAME": "张三",
		// The program got the token; Hermes removed it from what the model sees.
		"HERMES_AUTH_TOKEN": "[REDACTED]"} {
		if got.Env[k] != want {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], want)
		}
	}
	// The signature covers the program run and its stdin.
	sr := skills.SignedRequest{Method: skills.SignedMethodExec, Path: testBinary(t), BodySHA256: skills.BodySHA256([]byte(got.Stdin)),
		Nonce: got.Env["HERMES_NONCE"], Audience: "vpn_status", Identity: skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom",
			Account: "app-hr", CorpID: "ww123", ChatID: "chat-9", Timestamp: testNow.Unix()}}
	if got.Env["HERMES_SIGNATURE"] != sr.Sign(testKey) || got.Env["HERMES_AUDIENCE"] != "vpn_status" {
		t.Errorf("HERMES_SIGNATURE = %q, want the signature of %q", got.Env["HERMES_SIGNATURE"], sr.StringToSign())
	}
	if _, leaked := got.Env["HERMES_TEST_PARENT_SECRET"]; leaked {
		t.Errorf("the program inherited Hermes's environment")
	}
	if !strings.HasPrefix(got.Env["TRACEPARENT"], "00-") || got.Stdin != `{"ticket_id":`+quote(evil)+`}` {
		t.Errorf("traceparent %q stdin %q", got.Env["TRACEPARENT"], got.Stdin)
	}
	if strings.Contains(string(res.Body), "tok-123") {
		t.Errorf("body echoes the token: %s", res.Body)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestCommand_AllowList(t *testing.T) {
	s := commandSkill(t, "echo")
	t.Run("ErrNotListed", func(t *testing.T) {
		_, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{CommandAllowList: []string{"/usr/bin/true"}})
		if err == nil || !strings.Contains(err.Error(), "command.path") || !strings.Contains(err.Error(), "not in the command allow-list") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ErrNoAllowList", func(t *testing.T) {
		if _, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{}); err == nil {
			t.Errorf("a command skill loaded without any allow-list")
		}
	})
	t.Run("ErrRelativePath", func(t *testing.T) {
		rel := commandSkill(t, "echo")
		rel.Command.Path = "helper"
		_, err := skills.NewRegistry([]*skills.Skill{rel}, skills.Options{CommandAllowList: []string{"helper"}})
		if err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestCommand_Failures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		skill  func(*skills.Skill)
		mode   []string
		wantIs []error
		want   string
	}{
		{"Timeout", func(s *skills.Skill) { s.Timeout = 100 * time.Millisecond }, []string{"sleep"},
			[]error{skills.ErrUnavailable, context.DeadlineExceeded}, "no answer within 100ms"},
		{"OutputCap", func(s *skills.Skill) { s.Command.MaxOutputBytes = 1000 }, []string{"flood"},
			[]error{skills.ErrUnavailable}, "output exceeded 1000 bytes"},
		{"Refused", nil, []string{"exit", "77", "not", "your", "ticket"}, []error{skills.ErrRefused}, "exit 77 EX_NOPERM): not your ticket"},
		{"Crashed", nil, []string{"exit", "3", "database", "down"}, []error{skills.ErrUnavailable}, "database down"},
		{"MissingArgument", func(s *skills.Skill) { s.Command.Argv = append(s.Command.Argv, "{{.Args.missing}}") },
			[]string{"echo"}, []error{skills.ErrInvalidArguments}, "command.argv[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := commandSkill(t, tc.mode[0], tc.mode[1:]...)
			if tc.skill != nil {
				tc.skill(s)
			}
			reg := commandRegistry(t, s)
			start := time.Now()
			_, err := reg.Call(context.Background(), zhang, "vpn_status", json.RawMessage(`{"ticket_id":"INC-1"}`))
			for _, want := range tc.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want %v", err, want)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s: the program was not stopped", d)
			}
		})
	}
}

// TestCommand_EndOfOptions: a value starting with "-" must not become an
// option of the program: "--" goes before the first argument rendered
// from a template, unless the definition opts out (and check warns).
func TestCommand_EndOfOptions(t *testing.T) {
	run := func(s *skills.Skill) []string {
		t.Helper()
		res, err := commandRegistry(t, s).Call(context.Background(), zhang, "vpn_status", json.RawMessage(`{"ticket_id":"-rf"}`))
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		var got helperReport
		if err := json.Unmarshal(res.Body, &got); err != nil {
			t.Fatal(err)
		}
		return got.Argv
	}
	if got := run(commandSkill(t, "echo", "--format=json", "{{.Args.ticket_id}}")); strings.Join(got, " ") != "--format=json -- -rf" {
		t.Errorf("argv = %q, want the value after --", got)
	}
	optOut := commandSkill(t, "echo", "{{.Args.ticket_id}}")
	optOut.Command.NoEndOfOptions = true
	if got := run(optOut); strings.Join(got, " ") != "-rf" {
		t.Errorf("opted out: argv = %q", got)
	}
	files := fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "executor: command", "identity: none",
		"command:", "  path: /usr/bin/env", `  argv: ["{{.Args.x}}"]`, "  end_of_options: false")}
	if text := fmt.Sprint(skills.Check(files, skills.CheckOptions{})); !strings.Contains(text, `command.end_of_options: warning: is false: a value starting with "-"`) {
		t.Errorf("check findings = %s", text)
	}
}

// TestCommand_AllowListSymlink: bin/lnk is a symlink to another folder, so
// bin/lnk/../prog is not bin/prog. The path must be resolved before the
// allow-list check, and what runs is what was checked.
func TestCommand_AllowListSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(dir, "bin"), filepath.Join(outside, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The allowed program is harmless; the one outside is another program.
	mustSymlink(t, "/bin/true", filepath.Join(dir, "bin", "argv-env"))
	mustSymlink(t, testBinary(t), filepath.Join(outside, "argv-env"))
	mustSymlink(t, filepath.Join(outside, "sub"), filepath.Join(dir, "bin", "lnk"))
	allow := []string{filepath.Join(dir, "bin", "argv-env")}
	trick := dir + "/bin/lnk/../argv-env" // the kernel runs <outside>/argv-env (filepath.Join would clean it)

	s := commandSkill(t, "echo")
	s.Command.Path = trick
	_, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{CommandAllowList: allow, Getenv: secrets})
	if err == nil || !strings.Contains(err.Error(), "not in the command allow-list") {
		t.Fatalf("NewRegistry = %v, want the resolved program refused", err)
	}
	m := &skills.Skill{Name: "m", Description: "d", Executor: skills.ExecutorMCP, Identity: skills.IdentityConfig{None: true},
		MCP: &skills.MCPConfig{Command: trick}}
	if _, err := skills.NewRegistry([]*skills.Skill{m}, skills.Options{CommandAllowList: allow}); err == nil {
		t.Errorf("stdio MCP server: the resolved program loaded")
	}
	files := fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "executor: command", "identity: none",
		"command:", "  path: "+trick)}
	if text := fmt.Sprint(skills.Check(files, skills.CheckOptions{CommandAllowList: allow})); !strings.Contains(text, "error") {
		t.Errorf("skills check passed the trick: %s", text)
	}

	// A symlink that resolves to an allowed program runs that program.
	mustSymlink(t, testBinary(t), filepath.Join(dir, "bin", "helper"))
	s.Command.Path = filepath.Join(dir, "bin", "helper")
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{CommandAllowList: []string{testBinary(t)}, Getenv: secrets,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("allowed through a symlink: %v", err)
	}
	if _, err := reg.Call(context.Background(), zhang, "vpn_status", json.RawMessage(`{"ticket_id":"INC-1"}`)); err != nil {
		t.Errorf("Call: %v", err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
