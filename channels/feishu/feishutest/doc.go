// Package feishutest has fakes of Feishu for tests, speaking the real wire
// formats: events as Feishu posts them (encrypted, signed), a fake OpenAPI
// (tokens, replies, CardKit, bot info, contact) and a fake long-connection
// server at the protobuf frame level. It is for tests only, and it fakes
// Feishu, not the gateway (that is chantest.Sink).
//
// Files, by concept:
//   - Events: events.go (Message as an im.message.receive_v1 event, the
//     URL verification, encrypted and signed requests, Post).
//   - The OpenAPI: server.go (Server: tokens, replies and new messages
//     with uuid duplicate suppression, CardKit cards, bot info, user/get,
//     injected codes), images.go (image uploads).
//   - The long connection: ws.go (the endpoint and the socket: pings,
//     pushed event frames, fragments, hostile frames, acks, silence).
package feishutest
