package knowledge_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// service is a knowledge service attached to a database holding the
// leave rules (everyone) and the salary table (department 9 only).
func service(t *testing.T) *knowledge.Service {
	t.Helper()
	pool := storetest.NewPool(t)
	cfg, err := config.ParseConfig([]byte("database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	k := knowledge.New()
	if err := k.Attach(gateway.Services{Config: cfg, Pool: pool, Now: func() time.Time { return t0 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatal(err)
	}
	add(t, pool, knowledge.NewDocument{Title: "休假制度", Version: "2025版", Data: []byte(leave), Audience: knowledge.Audience{Corps: []string{corp}}})
	add(t, pool, knowledge.NewDocument{Title: "薪酬等级表", Data: []byte(salary), Audience: knowledge.Audience{Corps: []string{corp}, Departments: []string{"9"}}})
	return k
}

func message(user, text string, depts ...string) channels.Inbound {
	return channels.Inbound{Channel: "wecom", Account: "app", MsgID: "m-" + user, ChatID: user, Text: text,
		Sender: channels.Identity{UserID: user, CorpID: corp, Dept: depts}}
}

// call runs knowledge_search as the model would, with the query only.
func call(t *testing.T, k *knowledge.Service, in channels.Inbound, query string) string {
	t.Helper()
	tools := k.ChatTools(in)
	if len(tools) != 1 || tools[0].Spec().Name != knowledge.ToolName {
		t.Fatalf("tools for %q: %d", in.Text, len(tools))
	}
	args, _ := json.Marshal(map[string]string{"query": query})
	res, err := tools[0].Call(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Body)
}

func TestSearchToolIsBoundToTheVerifiedSender(t *testing.T) {
	k := service(t)
	// The model can pass only a query: whoever it names, the search is
	// the sender's.
	obs := call(t, k, message("zhangsan", "总监月薪上限多少", "2"), "lihr 部门9 总监月薪上限多少 薪酬等级表")
	if strings.Contains(obs, "58000") || strings.Contains(obs, "薪酬") {
		t.Fatalf("an outsider's tool returned a restricted passage: %s", obs)
	}
	obs = call(t, k, message("lihr", "总监月薪上限多少", "9"), "总监月薪上限多少")
	if !strings.Contains(obs, "58000") {
		t.Fatalf("HR's tool: %s", obs)
	}
}

func TestSourcesAreAddedByHermesForUsedPassagesOnly(t *testing.T) {
	k := service(t)
	in := message("zhangsan", "婚假有几天", "2")
	obs := call(t, k, in, "婚假几天")
	if !strings.Contains(obs, "婚假 3 天") {
		t.Fatalf("observation: %s", obs)
	}
	got, _ := k.Annotate(context.Background(), in, "按公司规定，婚假为 3 天，须在登记后一年内休完。")
	if !strings.HasSuffix(got, "来源：《休假制度》2025版 · 婚假") {
		t.Fatalf("reply = %q", got)
	}
	// Annotated once: the passages are not cited again.
	if again, _ := k.Annotate(context.Background(), in, "婚假为 3 天。"); again != "婚假为 3 天。" {
		t.Fatalf("second annotation: %q", again)
	}

	in = message("zhangsan", "公司有陪产假吗", "2")
	call(t, k, in, "陪产假")
	if got, _ := k.Annotate(context.Background(), in, "公司文档中没有关于陪产假的规定，建议咨询 HR。"); strings.Contains(got, "来源") {
		t.Fatalf("an answer the documents did not give cites them: %q", got)
	}
}

func TestSearchToolIsNotOfferedWithoutAVisibleDocument(t *testing.T) {
	k := service(t)
	other := message("lihr", "婚假有几天", "9")
	other.Sender.CorpID = "ww-other"
	if tools := k.ChatTools(other); len(tools) != 0 {
		t.Fatal("offered to an employee who may see no document")
	}
}
