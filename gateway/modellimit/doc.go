// Package modellimit protects the model from the gateway: the runs share
// a Limiter in front of it (a slot each, the per-minute budgets of
// requests and tokens, and after a 429 its Retry-After). model.limits_scope
// says who shares it: one replica's runs (replica, the default: with n
// replicas the model sees up to n times the limits), or every replica on
// the database (shared: the slots and budgets are rows in Postgres, at
// two short queries per model call). Retrying is not its job: the agent's
// run retries a 429, after the pause the limiter imposed.
//
// Files, by concept:
//   - The limiter: modellimit.go (Limiter and New, the model as one run
//     sees it behind it, telling the run when it queues; a 429 holds the
//     calls for its Retry-After; gate, where a call waits its turn).
//   - The replica's limits: replica.go (a channel of slots and token
//     buckets in memory).
//   - The shared limits: shared.go (slots leased in Postgres and renewed
//     while calls run, so a dead replica's come back; the budgets and
//     the 429 pause in one row, claimed atomically; one poller per
//     replica, backing off).
//   - The model's HTTP client: transport.go (HTTPClient, keeping
//     connections and reading Retry-After).
package modellimit
