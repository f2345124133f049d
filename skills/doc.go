// Package skills loads skill definitions (a directory per skill holding a
// SKILL.md), binds them to the verified caller and runs them over HTTP, MCP
// or a local command. A bound skill is a Tool: the only thing the agent can
// execute. It decides what a skill may do and as whom, not when one is
// called (that is the agent) nor who the caller is (the gateway binds the
// verified sender; the tool router's API keys map to one): nothing here
// reads a chat platform or the database.
//
// The caller's identity travels to backends in headers (or MCP _meta, or
// environment variables) set from the Caller the gateway binds and signed
// with HMAC (see identity.go); nothing the model writes can change it.
//
// Files, by concept:
//   - What a skill is: skill.go (Skill and its policies: retry, breaker,
//     auth, identity, access, confirm, MCP, command), tool.go (Caller, Spec,
//     Result, Confirmation, Tool: a skill bound to one caller),
//     triggers.go (when a skill is relevant to a text), errors.go (the
//     errors a call wraps, and HTTPError).
//   - Loading and checking: load.go (LoadDir and Parse of SKILL.md),
//     fields.go (the front matter fields, each decoded strictly),
//     validate.go (every problem of a definition at once), schema.go (the
//     parameters schema compiled, the model's arguments validated),
//     template.go (confirm prompts and command arguments), check.go (Check,
//     `hermes skills check`: errors and risky settings), openapi.go
//     (ImportOpenAPI, skills drafted from an OpenAPI document), samples.go
//     (the sample skills embedded for the demo).
//   - The registry: registry.go (Registry: the validated set, ToolsFor a
//     caller, Sleep), live.go (Live: the current registry, swapped on
//     SIGHUP), access.go (who may use a skill), call.go (Call and
//     CallConfirmed, the one entry point: access, arguments, confirmation,
//     retries, breaker, fallback), breaker.go (one circuit breaker per
//     skill).
//   - Executors: http.go (an HTTP call, the identity in headers), encode.go
//     (the request: path placeholders, query, body in the skill's content
//     type), mcp.go (MCP tools over shared client sessions, the identity in
//     _meta), command.go (a local program without a shell, the identity in
//     its environment), program.go (a program resolved and checked against
//     the allow-list).
//   - What a backend receives: identity.go (the signed identity and the
//     HMAC over the whole request), verify.go (VerifyRequest and VerifyMeta
//     for backends written in Go), auth.go (the skill's own credentials,
//     read at each call), idempotency.go (the Idempotency-Key of a write),
//     trace.go (traceparent, joining a backend's trace to the run's).
//   - Beyond one call: async.go (accepted work reported later: the
//     AsyncRegistrar and the signed AsyncCallback), files.go (the
//     FileIssuer of the message's attachments' URLs for skills that take
//     files, and FileURLs for backends), route.go (Route: the
//     tool-router API's batch of calls, which gateway/router serves).
package skills
