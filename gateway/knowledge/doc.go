// Package knowledge is Hermes' knowledge base: the company's own
// documents (handbooks, policies, how-tos), cut into passages by their
// structure and searched for the verified sender, the peer of skills.
//
// Access is decided in Postgres: every query that reads a passage carries
// the audience filter of the caller (visibleSQL: corp, user, departments,
// chat, in the vocabulary of skills' access), so a passage of a document
// the caller may not see is never read out of the database, let alone put
// before the model. Departments come from the same directory lookup
// skills use; when it failed, documents limited to departments are not
// searched.
//
// Documents are extracted by gateway/media/document under its caps
// (inflated bytes, zip entries, parse time), with a larger output budget
// (MaxChars). Versions of one document (its key) supersede each other by
// effective date: only the version in force is searched.
//
// Search is lexical (memory's bigram terms, BM25 in Go over Postings: the
// passages' terms inverted in each replica's memory, reloaded when the
// documents change; the audience filter is SQL's, and the passages' text
// is read by a query that applies it again), the question widened by a
// workplace vocabulary (餐补 → 伙食补助, knowledge.vocabulary) and by the
// passages' words that sound like a word no passage holds (婚家 → 婚假),
// and, when knowledge.embeddings is configured, hybrid: passages' vectors
// are ranked in Postgres by pgvector where it is installed (or can be:
// EnsurePgvector), else in Go (Vectors), and fused by reciprocal rank. A
// hit under 0.6 of the best one's score is not given. Adjacent passages
// that both match are merged around the best one, so an answer split over
// two sections comes whole, a passage announcing what follows comes with
// it, and each is cut to a window of sentences around the question's
// words under a budget per search (window.go). The model reads them as
// plain text, one title line per document (present.go).
//
// testdata/bench holds a company corpus and the questions employees ask
// about it: TestCorpus guards its access and recall, BenchmarkKnowledge
// prints its figures (README: "How well it answers").
//
// The folder knowledge.dir is kept in step by Base.Sync (at start, every
// knowledge.sync_interval by the leader's job, on SIGHUP), one replica at
// a time; a file's metadata is in a sidecar (FILE.yaml).
//
// What the answer did with the passages is recorded by Annotate: a trace
// step (TraceKind) of the passages given and cited, the citations per
// document, and a gap (the employee's question) when nothing was cited;
// only passages the tool gave that asker appear in either.
//
// Files: chunk.go (Cut: passages by headings, steps, table rows, pages),
// store.go (Add, Delete, List), search.go (Search, the audience filter),
// lexical.go (Postings: the in-memory term index and BM25), vocabulary.go
// (the colloquial words), typos.go (bigrams that sound alike: pinyin
// typos), window.go (what of a passage the model is given), leadin.go (a
// passage announcing what follows, given with it), present.go (how the
// model reads them: plain text grouped by document), vectors.go (Vectors, FillVectors), sync.go (Sync: the folder),
// syncjob.go (its periodic job), feature.go (the tool and Annotate),
// gaps.go (the trace step, gaps and citations). The SQL schema is
// migrations/00024_knowledge.sql, 00025_knowledge_gaps.sql, 00030 and
// 00034 (the terms' GIN index dropped).
package knowledge
