// Package router is the tool router: other systems run skills through the
// same executors as the identity their API key maps to (POST /v1/route),
// and skill backends post the late results of async calls (POST
// /v1/async/:token), which reach the chat the call came from through the
// outbox. A gateway.Feature: routes, jobs, and the skill registry's
// skills.AsyncRegistrar. It runs no agent and chooses no skill: a caller
// names the calls (skills.Route runs them), and an identity comes only from
// the API key, never from the request body.
//
// Files, by concept:
//   - The feature: router.go (Router: Attach, Routes, AddWorkers and
//     PeriodicJobs; the refusals, logged with an async token hidden).
//   - The tool router: route.go (/v1/route: its API keys, bounds and
//     per-key rate).
//   - Async calls: async.go (signed single-use callback tokens, the task
//     recorded before the call, the result posted into the outbox, and
//     the leader's job that tells users of tasks past their deadline).
package router
