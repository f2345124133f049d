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
// Search is lexical (memory's bigram terms, BM25 in SQL over a GIN index)
// and, when knowledge.embeddings is configured, hybrid: passages' vectors
// are ranked in Go (Vectors) and fused by reciprocal rank. A lexical hit
// far below the best one is not given. Adjacent passages that both match
// are merged, so an answer split over two sections comes whole.
//
// testdata/bench holds a company corpus and the questions employees ask
// about it: TestCorpus guards its access and recall, BenchmarkKnowledge
// prints its figures (README: "How well it answers").
//
// Files: chunk.go (Cut: passages by headings, steps, table rows, pages),
// store.go (Add, Delete, List), search.go (Search, the audience filter),
// vectors.go (Vectors, FillVectors). The SQL schema is
// migrations/00024_knowledge.sql.
package knowledge
