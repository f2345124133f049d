package knowledge_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// embeddingsServer is an OpenAI-compatible embeddings endpoint (POST
// /v1/embeddings, OpenAI's wire format) whose vectors have a 1 for each
// topic a text names, so 「VPN 连不上」 and 「远程接入」 are alike without a
// shared word.
func embeddingsServer(t *testing.T) *httptest.Server {
	topics := [][]string{{"vpn", "远程接入"}, {"打印", "彩印"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Input) != 1 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		v := make([]float32, len(topics)+1)
		for i, words := range topics {
			for _, w := range words {
				if strings.Contains(strings.ToLower(req.Input[0]), w) {
					v[i] = 1
				}
			}
		}
		v[len(topics)] = 0.1
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": "bge-m3",
			"data": []map[string]any{{"object": "embedding", "index": 0, "embedding": v}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestVectorsRankInHermesWithoutPgvector: this machine's Postgres offers
// no pgvector, so EnsurePgvector says so without an error and hybrid
// search ranks the vectors in Hermes: a passage that shares no word with
// the question is found by its meaning, and only for whoever may see it.
func TestVectorsRankInHermesWithoutPgvector(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	var offered bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'vector')`).Scan(&offered); err != nil {
		t.Fatal(err)
	}
	if offered {
		t.Skip("this Postgres offers pgvector: the fallback is not what runs here")
	}
	if ok, err := knowledge.EnsurePgvector(ctx, pool); ok || err != nil {
		t.Fatalf("EnsurePgvector = %v, %v; want false, nil", ok, err)
	}

	emb := embeddingsServer(t)
	cfg, err := config.ParseConfig([]byte("database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\nknowledge:\n  embeddings:\n    name: bge-m3\n    base_url: "+emb.URL+"/v1\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	kb := knowledge.NewBase(pool, cfg.Knowledge, slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return t0 })
	for _, d := range []knowledge.NewDocument{
		{Name: "it.md", Title: "IT 指南", Data: []byte("# IT 指南\n\n## 远程接入\n\n在家办公时先打开 EasyConnect 客户端，再登录内网。\n")},
		{Name: "ops.md", Title: "运维手册", Data: []byte("# 运维手册\n\n## 远程接入网关\n\n网关管理员口令每季度轮换。\n"),
			Audience: knowledge.Audience{Corps: []string{corp}, Departments: []string{"9"}}},
	} {
		if _, err := kb.Add(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var unembedded int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM knowledge_chunks WHERE embedding IS NULL`).Scan(&unembedded); err != nil || unembedded != 0 {
		t.Fatalf("%d passages without a vector (%v)", unembedded, err)
	}
	if lexical := search(t, pool, zhang, "vpn 连不上"); len(lexical) != 0 {
		t.Fatalf("the question shares words with a passage: %q", joined(lexical))
	}
	got, err := kb.Search(ctx, zhang, "vpn 连不上")
	if err != nil {
		t.Fatal(err)
	}
	if s := joined(got); !strings.Contains(s, "EasyConnect") || strings.Contains(s, "口令") {
		t.Fatalf("hybrid search for zhangsan: %q", s)
	}
	if !strings.Contains(logs.String(), "in_postgres_with_pgvector=false") {
		t.Errorf("the ranking path is not logged: %s", logs.String())
	}
}
