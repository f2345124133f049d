package config

import (
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KnowledgeConfig is the company's own documents (knowledge:), searched
// by the agent's knowledge_search tool for the verified sender
// (gateway/knowledge).
type KnowledgeConfig struct {
	// Enabled offers the knowledge_search tool, default true (it is
	// offered only once documents exist and the message asks something).
	Enabled *bool `yaml:"enabled"`
	// Dir is a folder of documents kept in step with the index (new,
	// changed and removed files, at start, on SIGHUP and every
	// SyncInterval); "": none. An absolute path.
	Dir string `yaml:"dir"`
	// SyncInterval is how often the folder is compared with the index,
	// by one replica; default 5m, at least 10s.
	SyncInterval time.Duration `yaml:"sync_interval"`
	// Corps is the default audience of a document added without one:
	// everyone in these corps. Empty: everyone in any corp (a deployment
	// of one company).
	Corps []string `yaml:"corps"`
	// Results is how many passages one search gives the model, default 5.
	Results int `yaml:"results"`
	// Embeddings is an OpenAI-compatible embeddings endpoint that makes
	// search hybrid. Left out: memory.embeddings' (itself defaulting to
	// the model section's base_url and api_key). Every passage's vector
	// must come from one model.
	Embeddings MemoryEmbeddings `yaml:"embeddings"`
	// Vocabulary adds to the built-in workplace vocabulary
	// (gateway/knowledge/vocabulary.go): a word employees use, mapped to
	// the words the documents use for it (报账: [报销]); a question holding
	// the word is searched with those too, at a lower weight. At most
	// maxKnowledgeVocabulary words of at most maxKnowledgeVocabularyWords
	// each.
	Vocabulary map[string][]string `yaml:"vocabulary"`
}

// Bounds of knowledge.vocabulary: every search looks for each word in the
// question.
const (
	maxKnowledgeVocabulary      = 2000
	maxKnowledgeVocabularyWords = 8
)

const defaultKnowledgeResults = 5

// Bounds of knowledge.sync_interval: a sync reads and hashes every file
// of the folder, so it is not run more often than minKnowledgeSync.
const (
	defaultKnowledgeSync = 5 * time.Minute
	minKnowledgeSync     = 10 * time.Second
)

// maxKnowledgeResults bounds knowledge.results: each passage is up to
// about 1,500 characters of the model's input.
const maxKnowledgeResults = 20

func (k *KnowledgeConfig) applyDefaults(memory MemoryEmbeddings, model ModelConfig) {
	if k.Enabled == nil {
		k.Enabled = ptr(true)
	}
	positive(&k.Results, defaultKnowledgeResults)
	positive(&k.SyncInterval, defaultKnowledgeSync)
	if !k.Embeddings.On() && k.Embeddings.BaseURL == "" {
		k.Embeddings = memory
		return
	}
	positive(&k.Embeddings.Timeout, defaultEmbeddingsTimeout)
	if k.Embeddings.MinSimilarity == 0 {
		k.Embeddings.MinSimilarity = defaultEmbeddingsMinSimilarity
	}
	k.Embeddings.inherit(model)
}

// On reports whether knowledge search is on.
func (k KnowledgeConfig) On() bool { return k.Enabled == nil || *k.Enabled }

func (k KnowledgeConfig) validate(bad func(key, format string, args ...any)) {
	if k.Dir != "" && !filepath.IsAbs(k.Dir) {
		bad("knowledge.dir", "must be an absolute path, got %q", k.Dir)
	}
	if k.SyncInterval < minKnowledgeSync {
		bad("knowledge.sync_interval", "must be at least %s, got %s", minKnowledgeSync, k.SyncInterval)
	}
	if k.Results > maxKnowledgeResults {
		bad("knowledge.results", "must be at most %d, got %d", maxKnowledgeResults, k.Results)
	}
	if slices.Contains(k.Corps, "") {
		bad("knowledge.corps", "must not hold an empty corp id")
	}
	k.Embeddings.validateAs("knowledge.embeddings", bad)
	if len(k.Vocabulary) > maxKnowledgeVocabulary {
		bad("knowledge.vocabulary", "must hold at most %d words, got %d", maxKnowledgeVocabulary, len(k.Vocabulary))
	}
	for word, canon := range k.Vocabulary {
		if strings.TrimSpace(word) == "" || len(canon) == 0 || len(canon) > maxKnowledgeVocabularyWords || slices.Contains(canon, "") {
			bad("knowledge.vocabulary", "%q must map to 1 to %d non-empty words", word, maxKnowledgeVocabularyWords)
		}
	}
}

// KnowledgeMessages are the words of the sources Hermes appends to an
// answer that used the company's documents (messages.knowledge).
type KnowledgeMessages struct {
	Sources string `yaml:"sources"` // the sources line; %s the documents, joined by Separator
	Page    string `yaml:"page"`    // a page of a PDF; %d the page
	// Separator joins the documents of the sources line.
	Separator string `yaml:"separator"`
}

// DefaultKnowledgeMessages are knowledge's words in Chinese.
var DefaultKnowledgeMessages = KnowledgeMessages{
	Sources:   "来源：%s",
	Page:      "第 %d 页",
	Separator: "；",
}
