package knowledge_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
)

// BenchmarkKnowledge prints the knowledge base's figures (issue #35's
// targets in brackets):
//
//   - Corpus/lexical and Corpus/hybrid: over testdata/bench, passage
//     recall@5 at the model's input [≥90% lexical, ≥95% hybrid], passages
//     of a document outside the asker's audience that reached the model
//     [0], superseded versions that did [0], unanswerable questions given a
//     passage, and the token ratio of the request carrying the passages to
//     the run's first request, counted with the agent's estimate [≤1.5].
//   - Corpus/heldout, heldout2, heldout3 and heldout4: recall over 20-24 questions
//     each written after each round of the work (testdata/bench/heldout.tsv,
//     heldout2.tsv, heldout3.tsv), never tuned for.
//   - Scale: search latency p50/p95 over 1,000 documents (~20,000
//     passages), lexical [p95 ≤50 ms] and hybrid without the embeddings
//     call [p95 ≤150 ms], with the size of the passages' table and indexes.
//
// The embeddings are a deterministic fake, not a model: hashed character
// unigrams and bigrams in 1,024 dimensions (bge-m3's size), served over
// OpenAI's wire format. It knows no synonyms, so the hybrid figures show
// the fusion's cost and its effect on typos, not what a real model adds.
func BenchmarkKnowledge(b *testing.B) {
	b.Run("Corpus/lexical", func(b *testing.B) { benchCorpus(b, "", nil) })
	b.Run("Corpus/hybrid", func(b *testing.B) {
		srv := fakeEmbeddings(b)
		benchCorpus(b, "knowledge:\n  embeddings:\n    base_url: "+srv.URL+"/v1\n    name: hash-bigram-1024\n    api_key: sk-bench\n", nil)
	})
	b.Run("Corpus/lexical-with-skills", func(b *testing.B) { benchCorpus(b, "", sampleCatalog(b)) })
	for _, set := range []struct{ name, file, what string }{
		{"Corpus/heldout", "heldout.tsv", "20 questions written after the first round"},
		{"Corpus/heldout2", "heldout2.tsv", "20 questions written after the second round"},
		{"Corpus/heldout3", "heldout3.tsv", "24 questions written after the third round"},
		{"Corpus/heldout4", "heldout4.tsv", "24 questions written after the third round's last change"},
	} {
		b.Run(set.name, func(b *testing.B) {
			k, cfg, docs, _ := corpusService(b, "")
			qs := readQuestions(b, set.file)
			var f figures
			for range b.N {
				f = evaluate(b, k, cfg, nil, docs, qs)
			}
			b.ReportMetric(100*f.recall(), "recall@5-%")
			b.Logf("%s: recall@5 %.1f%% (%d/%d); missed: %s; unanswerable given a passage: %d/%d; leaks %d; outdated %d",
				set.what, 100*f.recall(), f.found, f.answerable, strings.Join(f.missed, " | "), len(f.unanswerableGiven), f.unanswerable,
				len(f.leaks), len(f.outdated))
		})
	}
	b.Run("Scale", benchScale)
}

// benchCorpus measures the corpus' figures with knowledgeYAML's
// knowledge section, the skills of catalog offered beside
// knowledge_search when there is one.
func benchCorpus(b *testing.B, knowledgeYAML string, catalog *skills.Registry) {
	k, cfg, docs, qs := corpusService(b, knowledgeYAML)
	var f figures
	for range b.N {
		f = evaluate(b, k, cfg, catalog, docs, qs)
	}
	b.ReportMetric(100*f.recall(), "recall@5-%")
	b.ReportMetric(float64(len(f.leaks)), "restricted-leaks")
	b.ReportMetric(float64(len(f.outdated)), "outdated-used")
	b.ReportMetric(float64(len(f.unanswerableGiven)), "unanswerable-given-passage")
	b.ReportMetric(percentile(f.ratios, 50), "token-ratio-p50")
	b.ReportMetric(percentile(f.ratios, 90), "token-ratio-p90")
	b.Logf("%d documents, %d questions (%d answerable, %d unanswerable, %d by askers outside the answering document's audience)",
		len(docs), f.questions, f.answerable, f.unanswerable, f.outsiders)
	b.Logf("recall@5 at the model's input %.1f%% (%d/%d); missed: %s", 100*f.recall(), f.found, f.answerable, strings.Join(f.missed, " | "))
	b.Logf("restricted passages reaching outsiders: %d %v; superseded versions used: %d %v", len(f.leaks), f.leaks, len(f.outdated), f.outdated)
	b.Logf("unanswerable questions given a passage: %d/%d %v", len(f.unanswerableGiven), f.unanswerable, f.unanswerableGiven)
	b.ReportMetric(percentile(f.bareRatios, 50), "token-ratio-bare-p50")
	b.Logf("documents given per answerable question %.1f; tokens of the request with passages ÷ the first request: p50 %.2f, p90 %.2f, max %.2f "+
		"(first request p50 %.0f tokens, with passages p50 %.0f)", f.passagesPerAnswer, percentile(f.ratios, 50), percentile(f.ratios, 90),
		percentile(f.ratios, 100), percentile(f.firsts, 50), percentile(f.seconds, 50))
	b.Logf("the same ÷ that request with the tool's result emptied (it keeps the model's call of the tool): p50 %.2f, p90 %.2f",
		percentile(f.bareRatios, 50), percentile(f.bareRatios, 90))
}

// sampleCatalog is the demo's 20 sample skills (HR, IT, expenses), a
// deployment's catalog beside its documents: the agent offers them by
// relevance, so they are part of the first request as in production. No
// skill is called (askModel only searches).
func sampleCatalog(b *testing.B) *skills.Registry {
	defs, err := skills.LoadDir(skills.SamplesFS())
	if err != nil {
		b.Fatal(err)
	}
	reg, err := skills.NewRegistry(defs, skills.Options{BaseURL: "http://127.0.0.1:9", Getenv: func(string) string { return "bench-key" }})
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

func percentile[T float64 | time.Duration](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// fakeDims is the fake model's vector size, bge-m3's.
const fakeDims = 1024

// fakeVector is the fake model's vector of text: its letters-and-digits
// words, Han characters and Han bigrams hashed into fakeDims dimensions.
func fakeVector(text string) []float32 {
	v := make([]float32, fakeDims)
	bump := func(feature string, w float32) {
		h := fnv.New32a()
		h.Write([]byte(feature))
		v[h.Sum32()%fakeDims] += w
	}
	var prev rune
	var word []rune
	for _, r := range strings.ToLower(text) + " " {
		switch {
		case unicode.Is(unicode.Han, r):
			bump(string(r), 0.5)
			if prev != 0 {
				bump(string([]rune{prev, r}), 1)
			}
			prev = r
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word, prev = append(word, r), 0
			continue
		default:
			prev = 0
		}
		if len(word) > 0 {
			bump(string(word), 1)
			word = word[:0]
		}
	}
	return v
}

// fakeEmbeddings is an OpenAI-compatible embeddings endpoint (POST
// /v1/embeddings, OpenAI's request and answer) serving fakeVector.
func fakeEmbeddings(b testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string         `json:"object"`
			Data   []item         `json:"data"`
			Model  string         `json:"model"`
			Usage  map[string]int `json:"usage"`
		}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 1, "total_tokens": 1}}
		for i, in := range req.Input {
			out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: fakeVector(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// localEmbedder is fakeVector in process: the scale run embeds 20,000
// passages through FillVectors without 20,000 HTTP round trips.
type localEmbedder struct{}

func (localEmbedder) Embed(_ context.Context, text string) ([]float32, error) {
	return fakeVector(text), nil
}

// Scale of the latency run.
const (
	scaleDocs     = 1000
	scaleSections = 20
)

// benchScale measures search over the corpus among 1,000 generated
// documents of 20 sections each, written from the corpus' own sentences
// in random order (a tenth of them limited to a department).
func benchScale(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	docs, qs := loadCorpus(b)
	for _, d := range docs {
		if _, err := knowledge.Add(ctx, pool, d.newDocument(b), t0); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	addGenerated(b, pool, sentencesOf(b, docs))
	for {
		n, err := knowledge.FillVectors(ctx, pool, localEmbedder{}, 2000)
		if err != nil {
			b.Fatal(err)
		}
		if n < 2000 {
			break
		}
	}
	// As autovacuum would after a bulk load: until the visibility map is
	// set, an index-only scan (Vectors' check) still reads the table.
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE knowledge_chunks, knowledge_documents`); err != nil {
		b.Fatal(err)
	}
	var chunks, table, indexes int64
	err := pool.QueryRow(ctx, `SELECT count(*), pg_total_relation_size('knowledge_chunks'), pg_indexes_size('knowledge_chunks')
		FROM knowledge_chunks`).Scan(&chunks, &table, &indexes)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d documents, %d passages added and embedded in %s", len(docs)+scaleDocs, chunks, time.Since(start).Round(time.Second))

	vectors := knowledge.NewVectors()
	// As Base searches: the built-in vocabulary widens the questions.
	lex := knowledge.Lexical{Postings: knowledge.NewPostings(), Vocabulary: knowledge.NewVocabulary(nil)}
	// The first search loads the passages' terms (as the first after
	// any change to the documents does): its time is that load's.
	counted := time.Now()
	if _, err := knowledge.Search(ctx, pool, knowledge.Caller{CorpID: corp, UserID: "zhangsan"}, "婚假", 5, lex, knowledge.Similar{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("term index of %d passages loaded in %s (the first search after a change to the documents)", chunks, time.Since(counted).Round(time.Millisecond))
	embedded := make([][]float32, len(qs))
	for i, q := range qs {
		embedded[i] = fakeVector(q.text)
	}
	// Lexical and hybrid alternate question by question, so that both
	// meet the same load of a shared machine; the first round warms the
	// caches (and loads the vectors) and is not counted. Each search's
	// time is kept per round, and also each question's best of the
	// rounds: on a machine shared with other work (here 2 cores at a load
	// of about 10) the best is the search's own cost, the raw p95 the
	// neighbours' as well.
	const rounds = 4
	var lexical, hybrid, lexicalBest, hybridBest []time.Duration
	type timed struct {
		q string
		d time.Duration
	}
	var slowest []timed
	for range b.N {
		lexical, hybrid, lexicalBest, hybridBest, slowest = nil, nil, nil, nil, nil
		for i, q := range qs {
			c := knowledge.Caller{CorpID: corp, UserID: q.asker, ChatID: q.asker, Depts: askers[q.asker]}
			best := [2]time.Duration{time.Hour, time.Hour}
			for round := range rounds {
				for mode, sim := range []knowledge.Similar{{}, {Embedding: embedded[i], Min: 0.3, Vectors: vectors}} {
					t := time.Now()
					if _, err := knowledge.Search(ctx, pool, c, q.text, 5, lex, sim); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t)
					if round == 0 {
						continue
					}
					best[mode] = min(best[mode], d)
					if mode == 0 {
						lexical = append(lexical, d)
					} else {
						hybrid = append(hybrid, d)
					}
				}
			}
			lexicalBest, hybridBest = append(lexicalBest, best[0]), append(hybridBest, best[1])
			slowest = append(slowest, timed{q.text, best[0]})
		}
	}
	for _, l := range [][]time.Duration{lexical, hybrid, lexicalBest, hybridBest} {
		slices.Sort(l)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(lexicalBest, 50)), "lexical-p50-ms")
	b.ReportMetric(ms(percentile(lexicalBest, 95)), "lexical-p95-ms")
	b.ReportMetric(ms(percentile(hybridBest, 50)), "hybrid-p50-ms")
	b.ReportMetric(ms(percentile(hybridBest, 95)), "hybrid-p95-ms")
	b.ReportMetric(float64(table)/(1<<20), "table-MB")
	b.ReportMetric(float64(indexes)/(1<<20), "indexes-MB")
	b.Logf("search over %d passages, each question's best of %d rounds: lexical p50 %.1f ms, p95 %.1f ms; hybrid (embeddings call excluded) "+
		"p50 %.1f ms, p95 %.1f ms", chunks, rounds-1, ms(percentile(lexicalBest, 50)), ms(percentile(lexicalBest, 95)),
		ms(percentile(hybridBest, 50)), ms(percentile(hybridBest, 95)))
	b.Logf("every search, with the shared machine's load: lexical p50 %.1f ms, p95 %.1f ms; hybrid p50 %.1f ms, p95 %.1f ms",
		ms(percentile(lexical, 50)), ms(percentile(lexical, 95)), ms(percentile(hybrid, 50)), ms(percentile(hybrid, 95)))
	slices.SortFunc(slowest, func(a, b timed) int { return cmp.Compare(b.d, a.d) })
	var slow []string
	for _, t := range slowest[:min(8, len(slowest))] {
		slow = append(slow, fmt.Sprintf("%s %.0f ms", t.q, ms(t.d)))
	}
	b.Logf("slowest lexical searches: %s", strings.Join(slow, " | "))
	b.Logf("knowledge_chunks %.1f MB with its indexes %.1f MB (%d-dimension vectors)", float64(table)/(1<<20), float64(indexes)/(1<<20), fakeDims)
}

// sentencesOf are the corpus' sentences: the text the generated
// documents are written with.
func sentencesOf(b testing.TB, docs []benchDoc) []string {
	var out []string
	for _, d := range docs {
		src, err := os.ReadFile(filepath.Join(benchDir, "docs", d.file))
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			for _, s := range strings.SplitAfter(line, "。") {
				if s = strings.TrimSpace(s); len([]rune(s)) >= 12 && !strings.ContainsAny(s, "<>,#=") {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// addGenerated adds scaleDocs documents of scaleSections sections, each
// of 2 to 4 random sentences, four at a time.
func addGenerated(b testing.TB, pool *pgxpool.Pool, sentences []string) {
	rng := rand.New(rand.NewPCG(35, 1000))
	docs := make([]knowledge.NewDocument, scaleDocs)
	for i := range docs {
		var text strings.Builder
		fmt.Fprintf(&text, "# 制度汇编 %04d\n\n", i)
		for s := range scaleSections {
			fmt.Fprintf(&text, "## 第%d条 %s\n\n", s+1, string([]rune(sentences[rng.IntN(len(sentences))])[:6]))
			for range 2 + rng.IntN(3) {
				text.WriteString(sentences[rng.IntN(len(sentences))])
			}
			text.WriteString("\n\n")
		}
		docs[i] = knowledge.NewDocument{Name: fmt.Sprintf("gen-%04d.md", i), Data: []byte(text.String()),
			Title: fmt.Sprintf("制度汇编 %04d", i), Audience: knowledge.Audience{Corps: []string{corp}}}
		if i%10 == 0 {
			docs[i].Audience.Departments = []string{"9"}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(docs); i += 4 {
				if _, err := knowledge.Add(context.Background(), pool, docs[i], t0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
