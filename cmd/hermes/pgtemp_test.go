package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The demo's last resort: a throwaway server from the installed binaries.
func TestThrowawayPostgres(t *testing.T) {
	if _, err := findInitdb(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	url, cleanup, err := throwawayPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}
