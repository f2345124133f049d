// Package migrations holds Hermes' numbered SQL migrations (goose format),
// embedded in the binary. gateway/store applies them at start and through
// `hermes migrate`, under an advisory lock so that replicas starting at
// once migrate once. It holds SQL only; the Go that reads and writes the
// tables is gateway/store.
//
// Files, by concept:
//   - The embedding: embed.go (FS, every NNNNN_name.sql of this folder).
//   - The schema: the NNNNN_name.sql files (00001_foundation.sql, ...),
//     one change each, applied in number order.
package migrations
