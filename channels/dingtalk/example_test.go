package dingtalk

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The commented dingtalk section of hermes.example.yaml, uncommented,
// builds, and names every key RobotSection and Config have.
func TestExampleSection(t *testing.T) {
	data, err := os.ReadFile("../../hermes.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n#dingtalk:\n")
	if start < 0 {
		t.Fatal("no #dingtalk: section")
	}
	var section []string
	for _, line := range strings.Split(text[start+len("\n#dingtalk:\n"):], "\n") {
		if !strings.HasPrefix(line, "#  ") {
			break
		}
		line = strings.TrimPrefix(line, "#")
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			section = append(section, line)
		}
	}
	src := os.Expand(strings.Join(section, "\n"), func(k string) string { return "x-" + strings.ToLower(k) })
	ch, err := build(t, src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if _, ok := ch.(*Channel).robots["hr-bot"]; !ok {
		t.Fatal("no hr-bot")
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(Config{}), reflect.TypeOf(RobotSection{})} {
		for i := range typ.NumField() {
			key := typ.Field(i).Tag.Get("yaml")
			if !strings.Contains(src, key+":") {
				t.Errorf("hermes.example.yaml does not document %s", key)
			}
		}
	}
}
