// Package store is Hermes' Postgres layer: the pgx pool, migrations, and the
// tables of the message pipeline and of the features beside it. Functions
// take a Querier (or a pgx.Tx where rows must change together), so the
// caller puts them in one transaction with the job it inserts: the store
// runs statements and decides nothing about the pipeline, and it inserts
// no job itself (the job queue, River, is the gateway's; only its schema
// is migrated here).
//
// Files, by concept:
//   - The database: store.go (Open, InTx, ErrNotFound), migrate.go
//     (Migrate: River's schema and the embedded migrations, under an
//     advisory lock, skipped when up to date; MigrationsHash),
//     migrate_status.go (MigrationsPending, one query, for /readyz).
//   - The inbox: inbox.go (Querier, InboundRow, messages stored once per
//     platform message id, a batch in one multi-row insert, with their
//     live holds), nonces.go (single-use
//     callback proofs, claimed in the message's transaction), refusals.go
//     (refused callbacks counted per account and check).
//   - Sessions and runs: sessions.go (sessions, their history and recent
//     tools), runleases.go (session leases: claimed, renewed, lapsed,
//     handed on), pending.go (what a session waits for: a 「确认」 or a
//     follow-up answer), cards.go (confirmation and choice cards: stored,
//     locked by a tap, claimed at most once, settled; taps counted for the
//     doctor), runs.go (run traces and their steps), archive.go
//     (observations the agent compressed, kept per run).
//   - Replies: outbox.go (a reply's parts under its idempotency key, each
//     attempt recorded), drafts.go (a run's draft, a message's progress,
//     and the live holds of first parts), pacing.go (sends claimed against
//     sliding windows across replicas; ClaimUnits, several at once, for a
//     message's attachments against media.attachments_per_minute).
//   - Shared across replicas: leases.go (named leases, and advisory Locks
//     on a connection of their own), tokencache.go and tokenfetch.go
//     (TokenCache, the platforms' access tokens sealed in Postgres and
//     fetched once across replicas).
//   - Features: async.go (async skill tasks and their callback tokens),
//     reports.go (reports, their runs and deliveries).
//   - The console: admins.go (accounts and logins), logins.go (login
//     throttle counters), console.go (the console's read queries),
//     console_store.go (Console, the store as web/console's narrow Store),
//     console_charts.go (the overview's and skills page's series),
//     console_export.go (conversations and runs of a range, as CSV rows).
package store
