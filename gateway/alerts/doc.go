// Package alerts is threshold alerts for operators, a feature beside the
// pipeline (gateway.Feature): each rule of the config's alerts.rules
// watches one measure over a window (replies given up undelivered, agent
// runs that failed, the runs' p95 time to answer) and, when it is above
// the rule's threshold, posts one message to the rule's chat through the
// gateway's Outbox, like any reply.
//
// The check runs every minute as a River periodic job, on the leader of
// the replicas; a rule fires at most once per window (aligned to the
// window's length) across replicas, because the firing claims (rule,
// window start) in Postgres in the transaction that queues its message.
//
// Files, by concept:
//   - The feature: service.go (Service: Attach, which resolves every
//     rule's chat as reports resolve their targets, and the periodic job).
//   - Checking: check.go (Check: each rule measured, claimed and queued),
//     measure.go (the queries over outbox and runs).
package alerts
