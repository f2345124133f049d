package feishu_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
)

func buildErr(section string) error {
	cache := chantest.NewTokenCache()
	env := channels.Env{TokenCache: func(string) (channels.TokenCache, error) { return cache, nil }}
	decode := func(v any) error {
		dec := yaml.NewDecoder(bytes.NewReader([]byte(section)))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
	_, err := feishu.Platform.New(context.Background(), decode, env)
	return err
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"SecretRequired":   {"apps:\n  - {name: a, app_id: x, verification_token: t, encrypt_key: k}", "feishu.apps[0].app_secret: required"},
		"EncryptKeyInHTTP": {"apps:\n  - {name: a, app_id: x, app_secret: s, verification_token: t}", "feishu.apps[0].encrypt_key: required"},
		"TokenInHTTP":      {"apps:\n  - {name: a, app_id: x, app_secret: s, encrypt_key: k}", "feishu.apps[0].verification_token: required"},
		"Mode":             {"apps:\n  - {name: a, mode: poll, app_id: x, app_secret: s}", "feishu.apps[0].mode: must be http or websocket"},
		"Domain":           {"apps:\n  - {name: a, mode: websocket, app_id: x, app_secret: s, domain: open.feishu.cn}", "feishu.apps[0].domain: must be an http(s) origin"},
		"IDType":           {"apps:\n  - {name: a, mode: websocket, app_id: x, app_secret: s, id_type: email}", "feishu.apps[0].id_type: must be user_id or open_id"},
		"Name":             {"apps:\n  - {name: A_B, mode: websocket, app_id: x, app_secret: s}", "feishu.apps[0].name: required"},
		"Duplicate": {"apps:\n  - {name: a, mode: websocket, app_id: x, app_secret: s}\n  - {name: a, mode: websocket, app_id: y, app_secret: s}",
			"feishu.apps[1].name: duplicate"},
		"TimestampWindow": {"timestamp_window: -5m\napps: []", "feishu.timestamp_window: must be positive"},
		"UnknownKey":      {"apps:\n  - {name: a, mode: websocket, app_id: x, app_secret: s, secret: s}", "field secret not found"},
	} {
		t.Run(name, func(t *testing.T) {
			err := buildErr(tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConfigOK(t *testing.T) {
	if err := buildErr("apps:\n  - {name: a, mode: websocket, app_id: x, app_secret: s, domain: " + feishu.DomainLark + ", streaming: true, stream_deadline: 2m}"); err != nil {
		t.Fatal(err)
	}
}

// The commented app in hermes.example.yaml is a valid app once uncommented:
// every key it documents exists.
func TestExampleSectionDecodes(t *testing.T) {
	data, err := os.ReadFile("../../hermes.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\nfeishu:\n")
	head, rest, ok2 := strings.Cut(section, "  apps: []\n")
	if !ok || !ok2 {
		t.Fatal("no feishu section in hermes.example.yaml")
	}
	// The section's own keys, above apps.
	var keys []string
	for _, line := range strings.Split(head, "\n") {
		if body := strings.TrimPrefix(line, "  "); body != "" && !strings.HasPrefix(body, "#") {
			keys = append(keys, body)
		}
	}
	if len(keys) == 0 {
		t.Fatal("the feishu section documents no key of its own (timestamp_window)")
	}
	var app []string
	for _, line := range strings.Split(rest, "\n") {
		body, ok := strings.CutPrefix(line, "  #")
		if !ok {
			break
		}
		if strings.HasPrefix(strings.TrimSpace(body), "#") {
			continue // a comment about the key
		}
		app = append(app, body)
	}
	if len(app) < 9 {
		t.Fatalf("example app has %d keys:\n%s", len(app), strings.Join(app, "\n"))
	}
	yaml := os.Expand(strings.Join(keys, "\n")+"\napps:\n"+strings.Join(app, "\n"), func(string) string { return "x" })
	if err := buildErr(yaml); err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
}
