// Package dingtalktest fakes DingTalk for tests: the OpenAPI (access
// token, robot messages, AI cards, the legacy user API), session webhooks
// and the Stream gateway (connections/open and the WebSocket that pushes
// frames). It speaks the real wire formats over HTTP, so the code under
// test runs its real client path. It is for tests only, and it fakes
// DingTalk, not the gateway (that is chantest.Sink).
//
// Files, by concept:
//   - Messages in: message.go (Message as DingTalk delivers it, as text,
//     picture, richText, file, audio or video; Sign, and signed callback
//     requests, replays included).
//   - The APIs: server.go (Server: tokens, robot sends, session webhooks,
//     AI card calls, user/get, injected failures, a connection that goes
//     silent), media.go (media uploads), files.go (the files of received
//     messages: messageFiles/download, the download URLs, expiry and
//     whether a token reached them), faults.go (LoseAnswers: a send
//     delivered whose answer is lost).
//   - Stream mode: stream.go (the Stream gateway: tickets, the socket,
//     pushed callbacks and redeliveries, pings, disconnects, acks),
//     cards.go (taps on a card's buttons pushed on the card topic, only
//     to a connection that subscribed it and for a card created with
//     callbackType STREAM; the answers and updates that redraw a card).
package dingtalktest
