// Package modellimit protects the model from the gateway: the runs of one
// replica share a Limiter in front of it (a slot each, the per-minute
// budgets of requests and tokens, and after a 429 its Retry-After). It
// limits one replica's calls, not the deployment's: replicas share no
// budget, so with n replicas the model sees up to n times the limits.
// Retrying is not its job either: the agent's run retries a 429, after
// the pause the limiter imposed.
//
// Files, by concept:
//   - The limiter: modellimit.go (Limiter and New, the model as one run
//     sees it behind it, telling the run when it queues; a 429 holds the
//     replica's calls for its Retry-After; HTTPClient, the model's HTTP
//     client that keeps connections and reads Retry-After).
package modellimit
