// Package feishutest has fakes of Feishu for tests, speaking the real wire
// formats: events as Feishu posts them (encrypted, signed), a fake OpenAPI
// (tokens, replies, CardKit, bot info, contact) and a fake long-connection
// server at the protobuf frame level. It is for tests only, and it fakes
// Feishu, not the gateway (that is chantest.Sink).
//
// Files, by concept:
//   - Events: events.go (Message as an im.message.receive_v1 event, with
//     builders for image, file, audio, video and post content and replies;
//     the URL verification, encrypted and signed requests, Post).
//   - The OpenAPI: server.go (Server: tokens, replies and new messages
//     with uuid duplicate suppression, CardKit cards, bot info, user/get,
//     injected codes), images.go (image uploads), files.go (the files of
//     messages, with expiry and injected failures; messages read by id,
//     as a reply's quote).
//   - The long connection: ws.go (the endpoint and the socket: pings,
//     pushed event frames, fragments, hostile frames, acks, silence).
package feishutest
