// Package storetest gives each test a fresh, fully migrated Postgres
// database on the local server (127.0.0.1:5432, user postgres, trust auth;
// override with HERMES_TEST_PG_HOST / HERMES_TEST_PG_PORT). A template
// database is migrated once per schema version and cloned per test, so a
// test costs a clone, not a migration. It is for tests only: it starts no
// server (one must run) and knows no table (gateway/store's migrations
// make them).
//
// Files, by concept:
//   - Databases: storetest.go (URL and NewPool: a copy of the template per
//     test, made and dropped over a few kept connections, dropped behind
//     the tests and waited for by Main; the template migrated once per
//     store.MigrationsHash under an advisory lock; leftovers of ended
//     processes swept).
package storetest
