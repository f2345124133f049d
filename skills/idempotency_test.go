package skills

import (
	"encoding/json"
	"testing"
)

func TestIdempotencyKey(t *testing.T) {
	write := &Skill{Name: "it_ticket_create"}
	read := &Skill{Name: "it_ticket_status", ReadOnly: true}
	c := Caller{UserID: "zhangsan", Channel: "wecom", Account: "app", ChatID: "chat-1", Origin: 41, TraceID: "run-1"}
	key := func(s *Skill, c Caller, args string) string { return idempotencyKey(s, c, json.RawMessage(args)) }

	base := key(write, c, `{"title":"卡纸","n":1}`)
	if len(base) != 32 {
		t.Fatalf("key %q, want 32 hex digits", base)
	}
	if got := key(write, c, `{ "n": 1, "title": "卡纸" }`); got != base {
		t.Errorf("key order or spacing changed the key")
	}
	other := c
	other.TraceID = "run-2" // the same message run again
	if got := key(write, other, `{"title":"卡纸","n":1}`); got != base {
		t.Errorf("a new run of the same message changed the key")
	}
	for name, got := range map[string]string{
		"OtherArgs":    key(write, c, `{"title":"卡纸","n":2}`),
		"OtherMessage": key(write, Caller{UserID: "zhangsan", Channel: "wecom", Account: "app", ChatID: "chat-1", Origin: 42}, `{"title":"卡纸","n":1}`),
		"OtherUser":    key(write, Caller{UserID: "lisi", Channel: "wecom", Account: "app", ChatID: "chat-1", Origin: 41}, `{"title":"卡纸","n":1}`),
	} {
		if got == base {
			t.Errorf("%s: same key", name)
		}
	}
	if got := key(read, c, `{}`); got != "" {
		t.Errorf("read-only skill got key %q", got)
	}
	noOrigin := c
	noOrigin.Origin = 0
	if key(write, noOrigin, `{}`) == key(write, Caller{UserID: "zhangsan", Channel: "wecom", Account: "app", ChatID: "chat-1", TraceID: "run-2"}, `{}`) {
		t.Errorf("without an inbound message the run id must tell calls apart")
	}
}

// The key of a write is the same as before Origin had a type, so a backend
// that saw an attempt before an upgrade drops the repeat after it.
func TestIdempotencyKeyStableAcrossOriginType(t *testing.T) {
	c := Caller{UserID: "zhangsan", Channel: "wecom", Account: "app", ChatID: "chat-1", Origin: 41, TraceID: "run-1"}
	got := idempotencyKey(&Skill{Name: "it_ticket_create"}, c, json.RawMessage(`{"title":"卡纸","n":1}`))
	if want := "5f6f2bf9446641863577227e1ce8e0c5"; got != want {
		t.Fatalf("key %s, want %s (Origin \"41\" before)", got, want)
	}
}
