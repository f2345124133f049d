package wecom_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom"
)

// buildSection builds the channel of a `wecom:` section as the gateway
// does: strict decoding, a token cache per secret.
func buildSection(t *testing.T, section string) (channels.Channel, error) {
	t.Helper()
	decode := func(v any) error {
		dec := yaml.NewDecoder(bytes.NewReader([]byte(section)))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
	env := channels.Env{
		TokenCache: func(string) (channels.TokenCache, error) { return chantest.NewTokenCache(), nil },
		Now:        time.Now,
	}
	return wecom.Platform.New(context.Background(), decode, env)
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	key := strings.Repeat("a", 43)
	cases := []struct{ name, yaml, want string }{
		{"UnknownKey", "aps: []\n", "field aps not found"},
		{"AppFields", "apps:\n  - name: hr\n    corp_id: c\n", "wecom.apps[0].secret: required"},
		{"AESKey", "apps:\n  - name: hr\n    encoding_aes_key: short\n", "wecom.apps[0].encoding_aes_key: must be 43"},
		{"AppName", "apps:\n  - name: HR App\n", "wecom.apps[0].name"},
		{"DuplicateName", "apps:\n  - {name: hr, corp_id: c, agent_id: '1', secret: s, token: t, encoding_aes_key: " + key + "}\n" +
			"bots:\n  - {name: hr, corp_id: c, token: t, encoding_aes_key: " + key + "}\n", "wecom.bots[0].name: duplicate"},
		{"BotMode", "bots:\n  - {name: b, corp_id: c, mode: push}\n", "wecom.bots[0].mode"},
		{"BotCallbackKey", "bots:\n  - {name: b, corp_id: c, token: t}\n", "wecom.bots[0].encoding_aes_key"},
		{"BotSocketSecret", "bots:\n  - {name: b, corp_id: c, mode: websocket, bot_id: x}\n", "wecom.bots[0].secret: required"},
		{"BotURL", "bots:\n  - {name: b, corp_id: c, mode: websocket, bot_id: x, secret: s, url: 'http://x'}\n", "wecom.bots[0].url"},
		// Each rule once, in the section: what the crypto or the app would
		// refuse later is refused here, naming the key.
		{"AESKeyNotBase64", "apps:\n  - {name: hr, corp_id: c, agent_id: '1', secret: s, token: t, encoding_aes_key: '" + strings.Repeat("!", 43) + "'}\n",
			"wecom.apps[0].encoding_aes_key: must be 43"},
		{"BotAESKeyNotBase64", "bots:\n  - {name: b, corp_id: c, token: t, encoding_aes_key: '" + strings.Repeat("!", 43) + "'}\n",
			"wecom.bots[0].encoding_aes_key: must be 43"},
		{"AgentID", "apps:\n  - {name: hr, corp_id: c, agent_id: abc, secret: s, token: t, encoding_aes_key: " + key + "}\n", "wecom.apps[0].agent_id: must be"},
		{"BotFetchHosts", "bots:\n  - {name: b, corp_id: c, token: t, encoding_aes_key: " + key + ", fetch_hosts: [qyapi.weixin.qq.com, 'https://evil.example']}\n",
			"wecom.bots[0].fetch_hosts[1]: \"https://evil.example\" is not a host name"},
		{"BotFetchAddresses", "bots:\n  - {name: b, corp_id: c, token: t, encoding_aes_key: " + key + ", fetch_allow_addresses: [169.254.0.47, 'COS']}\n",
			"wecom.bots[0].fetch_allow_addresses[1]"},
		{"BotFetchWildcard", "bots:\n  - {name: b, corp_id: c, token: t, encoding_aes_key: " + key + ", fetch_hosts: ['*.com']}\n",
			"wecom.bots[0].fetch_hosts[0]"},
		{"BotURLNoHost", "bots:\n  - {name: b, corp_id: c, mode: websocket, bot_id: x, secret: s, url: 'wss://'}\n", "wecom.bots[0].url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := buildSection(t, c.yaml)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		ch, err := buildSection(t, "apps:\n  - {name: hr, corp_id: c, agent_id: '1', secret: s, token: t, encoding_aes_key: "+key+"}\n")
		if err != nil {
			t.Fatal(err)
		}
		routes := ch.(channels.HTTPReceiver).Routes(nil)
		if len(routes) != 2 || routes[0].Path != "/wecom/hr/callback" {
			t.Fatalf("routes %+v, want GET and POST /wecom/hr/callback", routes)
		}
	})
}

// Bots come from the `wecom:` section like apps: a callback bot has its
// callback URL, a websocket bot one exclusive connection and no route.
func TestBot_FromConfig(t *testing.T) {
	key := strings.Repeat("a", 43)
	ch, err := buildSection(t, "bots:\n"+
		"  - {name: bot-it, corp_id: c, token: t, encoding_aes_key: "+key+"}\n"+
		"  - {name: bot-hr, corp_id: c, mode: websocket, bot_id: x, secret: s, bot_name: HR助手}\n")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range ch.(channels.HTTPReceiver).Routes(nil) {
		paths = append(paths, r.Method+" "+r.Path)
	}
	if strings.Join(paths, ",") != "GET /wecom/bot/bot-it/callback,POST /wecom/bot/bot-it/callback" {
		t.Fatalf("routes %v", paths)
	}
	conns := ch.(channels.StreamReceiver).Connections()
	if len(conns) != 1 || conns[0].Account != "bot-hr" || !conns[0].Exclusive {
		t.Fatalf("connections %+v", conns)
	}
}

// TestConfigCards: an app shows cards unless its section says cards:
// false.
func TestConfigCards(t *testing.T) {
	key := strings.Repeat("a", 43)
	app := "apps:\n  - {name: hr, corp_id: c, agent_id: '1', secret: s, token: t, encoding_aes_key: " + key
	for _, tc := range []struct {
		extra string
		want  int
	}{{"", wecom.MaxCardButtons}, {", cards: true", wecom.MaxCardButtons}, {", cards: false", 0}} {
		ch, err := buildSection(t, app+tc.extra+"}\n")
		if err != nil {
			t.Fatal(err)
		}
		if got := ch.(channels.Carder).CardButtons("hr"); got != tc.want {
			t.Errorf("%q: %d buttons, want %d", tc.extra, got, tc.want)
		}
	}
}
