package skills_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

func TestCheck(t *testing.T) {
	files := fstest.MapFS{
		// Several errors in one file are all reported, each with its field.
		"broken/SKILL.md": skill("name: broken", "description: d", "endpoint: /x", "timout: 5s",
			"retry: {max_attempts: 50, on: [503]}", "content_type: text/xml"),
		"slow/SKILL.md": skill("name: hr_slow_report", "description: d", "endpoint: http://reports.corp.example/run",
			"timeout: 45s", "identity: {hmac_key_env: K}"),
		"retries/SKILL.md": skill("name: it_ticket_create", "description: d", "endpoint: https://it.example.com/t",
			"timeout: 30s", "retry: {max_attempts: 4}", "identity: {hmac_key_env: K}"),
		"fallback/SKILL.md": skill("name: it_fast", "description: d", "endpoint: https://it.example.com/f",
			"circuit_breaker: {failures: 3}", "fallback: it_missing", "confirm: false", "identity: {hmac_key_env: K}"),
		"ok/SKILL.md": skill("name: hr_ok", "description: d", "endpoint: https://hr.example.com/ok", "identity: {hmac_key_env: K}"),
	}
	findings := skills.Check(files, skills.CheckOptions{RunBudget: 90 * time.Second})
	var got []string
	for _, f := range findings {
		got = append(got, fmt.Sprintf("%s:%d %s %s", f.File, f.Line, f.Field, f.Severity))
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"broken/SKILL.md:5 timout error",
		"broken/SKILL.md:6 retry.max_attempts error",
		"broken/SKILL.md:6 retry.on error",
		"broken/SKILL.md:7 content_type error",
		"slow/SKILL.md:5 timeout warning",  // 45s > 90s/3
		"slow/SKILL.md:4 endpoint warning", // plain http to a remote host
		"retries/SKILL.md:6 retry.max_attempts warning",
		"retries/SKILL.md:6 retry.on warning", // a POST retried after timeouts
		"retries/SKILL.md:2 confirm warning",  // "create" without confirm
		"fallback/SKILL.md:6 fallback error",
		"ok/SKILL.md", // nothing to say: must not appear
	} {
		if strings.HasPrefix(want, "ok/") {
			if strings.Contains(text, want) {
				t.Errorf("findings for a clean skill:\n%s", text)
			}
			continue
		}
		if !strings.Contains(text, want) {
			t.Errorf("findings lack %q:\n%s", want, text)
		}
	}
	if !skills.HasErrors(findings) {
		t.Errorf("HasErrors = false")
	}
	for _, f := range findings {
		if f.File == "" || f.Message == "" {
			t.Errorf("finding without file or message: %+v", f)
		}
	}
	if s := findings[0].String(); !strings.HasPrefix(s, "broken/SKILL.md:5: timout: error: unknown field") {
		t.Errorf("String() = %q", s)
	}
}

func TestCheck_IdentityAndBaseURL(t *testing.T) {
	files := fstest.MapFS{"a/SKILL.md": skill("name: hr_a", "description: d", "endpoint: /a")}
	text := fmt.Sprint(skills.Check(files, skills.CheckOptions{}))
	if !strings.Contains(text, "identity: error: no key signs the caller's identity") || !strings.Contains(text, "skills.base_url") {
		t.Errorf("findings = %s", text)
	}
	text = fmt.Sprint(skills.Check(files, skills.CheckOptions{BaseURL: "http://10.0.0.8", DefaultHMACKeyEnv: "K"}))
	if strings.Contains(text, "no key signs") || !strings.Contains(text, "plain http://") {
		t.Errorf("findings = %s", text)
	}
	if f := skills.Check(files, skills.CheckOptions{BaseURL: "http://127.0.0.1:8080", DefaultHMACKeyEnv: "K"}); len(f) != 0 {
		t.Errorf("loopback http and a default key: %v", f)
	}
}
