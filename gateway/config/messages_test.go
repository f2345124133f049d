package config_test

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hermes-gw/hermes/gateway/config"
)

const minimalYAML = "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"

// word is one entry of the catalogue: its YAML path, its place in
// config.Messages and its default.
type word struct {
	key   string // messages.agent.confirm
	index []int  // reflect field path from Messages
	def   reflect.Value
}

// words lists every string and list entry of config.Messages with a YAML
// key, walking nested sections (the console's free-form map is left out).
func words(t *testing.T) []word {
	t.Helper()
	var out []word
	var walk func(prefix string, typ reflect.Type, def reflect.Value, index []int)
	walk = func(prefix string, typ reflect.Type, def reflect.Value, index []int) {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			idx := append(slices.Clone(index), i)
			switch typ.Field(i).Type.Kind() {
			case reflect.String, reflect.Slice:
				out = append(out, word{prefix + "." + name, idx, def.Field(i)})
			case reflect.Struct:
				walk(prefix+"."+name, typ.Field(i).Type, def.Field(i), idx)
			}
		}
	}
	walk("messages", reflect.TypeFor[config.Messages](), reflect.ValueOf(config.DefaultMessages), nil)
	if len(out) < 70 {
		t.Fatalf("found only %d words; the walk is broken", len(out))
	}
	return out
}

// setPath puts v at a dotted path of a YAML mapping.
func setPath(root map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	m := root
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// Every word of the catalogue is read from YAML: each is set to a value of
// its own (keeping its default's verbs) and must come out of ParseConfig
// as set, nowhere replaced by a default.
func TestEveryWordIsConfigurable(t *testing.T) {
	ws := words(t)
	doc := map[string]any{}
	if err := yaml.Unmarshal([]byte(minimalYAML), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for _, w := range ws {
		var v any
		if w.def.Kind() == reflect.String {
			v = "【" + w.key + "】" + w.def.String()
		} else {
			list := make([]string, w.def.Len())
			for i := range list {
				list[i] = fmt.Sprintf("%s-%d", w.key, i)
			}
			v = list
		}
		setPath(doc, w.key, v)
		want[w.key] = v
	}
	setPath(doc, "messages.console", map[string]any{"zh": map[string]any{"title": "某某公司 Hermes"}})
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseConfig(data, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(cfg.Messages)
	for _, w := range ws {
		f := got.FieldByIndex(w.index)
		var v any = f.String()
		if f.Kind() == reflect.Slice {
			v = f.Interface()
		}
		if !reflect.DeepEqual(v, want[w.key]) {
			t.Errorf("%s = %v, want %v", w.key, v, want[w.key])
		}
	}
	if cfg.Messages.Agent.Empty != want["messages.empty"] {
		t.Errorf("the agent's empty answer is %q, want messages.empty", cfg.Messages.Agent.Empty)
	}
	if cfg.Messages.Console["zh"]["title"] != "某某公司 Hermes" {
		t.Errorf("messages.console = %v", cfg.Messages.Console)
	}
}

// Leaving messages out gives the defaults, the agent's empty answer being
// messages.empty's.
func TestWordsDefault(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(minimalYAML), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Messages, config.DefaultMessages) {
		t.Fatalf("defaults differ:\n%+v\n%+v", cfg.Messages, config.DefaultMessages)
	}
}

// A sentence that loses or gains a verb, or an empty list, is refused
// naming its key.
func TestBadWordsAreRefusedNamingTheKey(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"MissingVerb", "messages:\n  confirmed: 已执行\n", "messages.confirmed: must have the verbs [%s]"},
		{"ExtraVerb", "messages:\n  reset: 已重置 %s\n", "messages.reset: must have the verbs (none)"},
		{"SwappedVerbs", "messages:\n  reports:\n    created: 编号 %d 的「%s」已创建\n", "messages.reports.created"},
		{"AgentWord", "messages:\n  agent:\n    stopped_at: 停了\n", "messages.agent.stopped_at"},
		{"ScheduleWord", "messages:\n  reports:\n    schedule:\n      daily: 每天\n", "messages.reports.schedule.daily"},
		{"SixWeekdays", "messages:\n  reports:\n    schedule:\n      weekdays: [一, 二, 三, 四, 五, 六]\n", "messages.reports.schedule.weekdays: must name 7 days"},
		{"EmptyConfirmWords", "messages:\n  confirm_words: []\n", "messages.confirm_words: must not be empty"},
		{"UnknownWord", "messages:\n  agent:\n    confirmm: x\n", "unknown key confirmm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.ParseConfig([]byte(minimalYAML+c.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// hermes.example.yaml lists every word with its default value (what a
// deployment copies is what it would get).
func TestExampleDocumentsEveryWord(t *testing.T) {
	data, err := os.ReadFile("../../hermes.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Messages map[string]any `yaml:"messages"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	root := map[string]any{"messages": doc.Messages}
	for _, w := range words(t) {
		v, ok := lookup(root, w.key)
		if !ok {
			t.Errorf("%s is not in hermes.example.yaml", w.key)
			continue
		}
		if w.def.Kind() == reflect.String && v != w.def.String() {
			t.Errorf("%s: the example says %q, the default is %q", w.key, v, w.def.String())
		}
	}
	if _, ok := doc.Messages["console"]; !ok {
		t.Error("messages.console is not in hermes.example.yaml")
	}
}

func lookup(m map[string]any, key string) (any, bool) {
	parts := strings.Split(key, ".")
	var cur any = m
	for _, p := range parts {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}
