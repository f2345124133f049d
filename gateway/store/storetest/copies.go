package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CopiesOf are the table.column (with a row count) of every text, JSON,
// array or binary column of pool's database that holds text somewhere,
// found by reading the schema, so a column added later is searched too:
// how a test proves that something forgotten or erased is gone.
func CopiesOf(t testing.TB, pool *pgxpool.Pool, text string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'jsonb', 'json', 'bytea', 'ARRAY')
ORDER BY table_name, column_name`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ table, name, kind string }
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name, &c.kind); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, c := range cols {
		expr := fmt.Sprintf("strpos(%q::text, $1) > 0", c.name)
		switch c.kind {
		case "bytea":
			expr = fmt.Sprintf("position(convert_to($1, 'UTF8') IN %q) > 0", c.name)
		case "ARRAY":
			expr = fmt.Sprintf("strpos(array_to_string(%q, ' '), $1) > 0", c.name)
		}
		var n int
		if err := pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %q WHERE %s", c.table, expr), text).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("%s.%s (%d rows)", c.table, c.name, n))
		}
	}
	return found
}
