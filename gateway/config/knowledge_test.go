package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

func TestKnowledgeEmbeddingsInheritMemorysThenTheModels(t *testing.T) {
	t.Parallel()
	cfg := parse(t, memoryBase+"memory:\n  embeddings:\n    name: text-embedding-v3\n")
	if ep := cfg.Knowledge.Embeddings; ep.Name != "text-embedding-v3" || ep.BaseURL != cfg.Model.BaseURL || cfg.Knowledge.Results != 5 || cfg.Knowledge.SyncInterval != 5*time.Minute || !cfg.Knowledge.On() {
		t.Errorf("memory's endpoint not inherited: %+v", cfg.Knowledge)
	}
	cfg = parse(t, memoryBase+"knowledge:\n  embeddings:\n    name: bge-m3\n")
	if ep := cfg.Knowledge.Embeddings; ep.Name != "bge-m3" || ep.BaseURL != cfg.Model.BaseURL || ep.APIKey != "sk-model" || ep.MinSimilarity != 0.3 {
		t.Errorf("own endpoint on the model's URL: %+v", ep)
	}
}

func TestKnowledgeErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yaml, want string }{
		{"RelativeDir", "knowledge:\n  dir: handbook\n", "knowledge.dir: must be an absolute path"},
		{"SyncInterval", "knowledge:\n  sync_interval: 1s\n", "knowledge.sync_interval: must be at least 10s"},
		{"Results", "knowledge:\n  results: 50\n", "knowledge.results: must be at most 20"},
		{"EmptyCorp", "knowledge:\n  corps: [\"\"]\n", "knowledge.corps"},
		{"EmptyVocabularyWord", "knowledge:\n  vocabulary:\n    报账: []\n", "knowledge.vocabulary: \"报账\" must map to 1 to 8 non-empty words"},
		{"BlankVocabularyTarget", "knowledge:\n  vocabulary:\n    报账: [\"\"]\n", "knowledge.vocabulary"},
		{"BadURL", "knowledge:\n  embeddings:\n    name: bge-m3\n    base_url: 10.0.0.5:8000\n", "knowledge.embeddings.base_url: must be an http(s) URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.ParseConfig([]byte(memoryBase+c.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
