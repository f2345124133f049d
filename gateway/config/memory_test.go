package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

// memoryBase is a config whose model is at an OpenAI-compatible endpoint.
const memoryBase = "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  base_url: https://dashscope.aliyuncs.com/compatible-mode/v1\n" +
	"  api_key: sk-model\n  name: qwen-plus\n"

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(yaml), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestMemoryEmbeddingsDefaults(t *testing.T) {
	t.Parallel()
	cfg := parse(t, memoryBase)
	ep, err := cfg.Memory.EmbeddingsEndpoint(cfg.Model)
	if err != nil || ep.On() || ep.Timeout != 10*time.Second || ep.MinSimilarity != 0.3 || ep.BaseURL != "" {
		t.Errorf("embeddings left out: %+v, %v; want off, 10s, 0.3", ep, err)
	}
}

// Base URL and key default to the model's, as media's endpoints do; an
// endpoint of its own keeps its own key, empty or not.
func TestMemoryEmbeddingsInheritTheModelsEndpoint(t *testing.T) {
	t.Parallel()
	cfg := parse(t, memoryBase+"memory:\n  embeddings:\n    name: text-embedding-v3\n    timeout: 3s\n    min_similarity: 0.45\n")
	ep, err := cfg.Memory.EmbeddingsEndpoint(cfg.Model)
	if err != nil {
		t.Fatal(err)
	}
	if !ep.On() || ep.Name != "text-embedding-v3" || ep.BaseURL != cfg.Model.BaseURL || ep.APIKey != "sk-model" ||
		ep.Timeout != 3*time.Second || ep.MinSimilarity != 0.45 {
		t.Errorf("inherited: %+v", ep)
	}
	cfg = parse(t, memoryBase+"memory:\n  embeddings:\n    name: bge-m3\n    base_url: http://10.0.0.5:8000/v1\n")
	if ep, err := cfg.Memory.EmbeddingsEndpoint(cfg.Model); err != nil || ep.BaseURL != "http://10.0.0.5:8000/v1" || ep.APIKey != "" {
		t.Errorf("own endpoint: %+v, %v; want its URL and no key", ep, err)
	}
}

func TestMemoryEmbeddingsErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	offline := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"NoBaseURL", offline + "memory:\n  embeddings:\n    name: bge-m3\n", "memory.embeddings.base_url: required"},
		{"NoName", memoryBase + "memory:\n  embeddings:\n    base_url: http://e/v1\n", "memory.embeddings.name: required with memory.embeddings.base_url"},
		{"BadURL", memoryBase + "memory:\n  embeddings:\n    name: bge-m3\n    base_url: 10.0.0.5:8000\n", "memory.embeddings.base_url: must be an http(s) URL"},
		{"Similarity", memoryBase + "memory:\n  embeddings:\n    name: bge-m3\n    min_similarity: 1.5\n", "memory.embeddings.min_similarity: must be between 0 and 1"},
		{"Negative", memoryBase + "memory:\n  embeddings:\n    min_similarity: -0.2\n", "memory.embeddings.min_similarity"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Refused when the file is read, as every other key is.
			if _, err := config.ParseConfig([]byte(c.yaml), env(nil)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := config.ParseConfig([]byte(memoryBase+"memory:\n  embeddings:\n    dims: 3\n"), env(nil)); err == nil ||
		!strings.Contains(err.Error(), "dims") {
		t.Errorf("unknown key: %v", err)
	}
}
