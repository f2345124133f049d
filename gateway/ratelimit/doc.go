// Package ratelimit is the per-key request rate of Hermes's APIs for other
// systems (the tool router's keys, the OpenAI-compatible API's), one copy
// both use. It counts on one replica, in memory: it keeps one key from
// crowding out the others there, and is no quota across replicas (the
// model's own limits are gateway/modellimit).
//
// Files, by concept:
//   - The limiter: ratelimit.go (PerKey, a token bucket per API key, and
//     RetryAfterSeconds, the Retry-After of a refusal).
package ratelimit
