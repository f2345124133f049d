// Package migrations holds Hermes' numbered SQL migrations (goose format),
// embedded in the binary. gateway/store applies them at start and through
// `hermes migrate`.
package migrations

import "embed"

// FS holds every NNNNN_name.sql file of this folder.
//
//go:embed *.sql
var FS embed.FS
