package migrations

import "embed"

// FS holds every NNNNN_name.sql file of this folder.
//
//go:embed *.sql
var FS embed.FS
