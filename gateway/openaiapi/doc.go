// Package openaiapi is the OpenAI-compatible API (POST
// /v1/chat/completions, GET /v1/models): existing OpenAI clients talk to
// the company's agent, each API key an identity. A gateway.Feature with
// public routes; go-openai's types stay inside it. It is not a model
// proxy: a request is one agent turn with the skills the key's identity
// may use, run through the gateway's AgentRunner inline in the request
// (not through the inbox) and recorded like a chat message's, so that
// `hermes runs` and the console show it.
//
// Files, by concept:
//   - The feature: api.go (API: Attach and Routes, API keys, the OpenAI
//     error shape, /v1/models, and the bounded decoding of a chat
//     request).
//   - A turn: run.go (/v1/chat/completions: the turn run through the
//     gateway's AgentRunner as the key's identity and recorded like a chat
//     message's), session.go (an API session's chat id, in the key's own
//     namespace so it can never borrow a platform chat's).
//   - Answers: stream.go (streaming answers as chat.completion.chunk
//     events; a client that stops reading is dropped without holding the
//     run).
//   - Limits: limits.go (per-key concurrency and requests per minute,
//     OpenAI's 429).
package openaiapi
