// Package openaitest is a fake OpenAI-compatible chat completions server
// for tests. It speaks the real wire format over HTTP (httptest), so the
// code under test runs its real client: request encoding, auth header,
// response decoding, tool calls and HTTP errors. It is a test double for
// the model endpoint only; it thinks nothing (the offline demo model,
// agent.OfflineModel, is the one that pretends to).
//
// Replies are scripted (Script) or computed (SetHandler). A request with
// "stream": true is answered as server-sent events, the way OpenAI streams:
// "data: {chunk}" lines (role, content pieces, tool-call fragments with
// their index, the finish reason, usage when stream_options.include_usage
// is set) and "data: [DONE]". The server also enforces the protocol rules
// real endpoints enforce, answering 400 when they are broken: a model
// name, at least one message, and every assistant tool call answered by a
// "tool" message carrying its tool_call_id before the conversation goes
// on.
//
// Files, by concept:
//   - The endpoint: server.go (Server, Reply and ToolCall, Script and
//     SetHandler, the recorded requests, the protocol checks, Slow).
//   - The wire: wire.go (the response and error bodies, written with local
//     structs rather than go-openai's so a test proves the client reads
//     OpenAI's format), stream.go (stream=true answered as server-sent
//     chunks).
package openaitest
