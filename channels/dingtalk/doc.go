// Package dingtalk is the DingTalk (钉钉) platform: robots of enterprise
// internal apps (企业内部应用机器人), receiving messages by HTTP callback or
// by Stream mode (a long connection, no public URL), and answering through
// the message's session webhook, the robot OpenAPI, or a streaming AI card.
// Everything DingTalk-specific lives here: the `dingtalk:` YAML section, the
// callback route, the signature check, the stream client and the senders.
// Like every platform package it stores nothing and runs no agent: a
// message goes to the gateway through channels.Sink, and access tokens go
// through the gateway's shared token cache.
//
// The Stream client is written by hand over github.com/coder/websocket
// rather than taken from open-dingtalk/dingtalk-stream-sdk-go: the SDK acks
// every frame itself once its handler returns (an error becomes an error
// ack), so it cannot leave a frame unacked for DingTalk to send again, and it
// reconnects on a fixed sleep with a package-level logger and no context.
//
// Files, by concept:
//   - The platform: dingtalk.go (ChannelName, DingTalk's documented limits,
//     the defaults, the sentinel errors), config.go (the `dingtalk:`
//     section, Platform and Build), channel.go (Channel: every robot an
//     account, with Limits, Send, Routes, Connections and Departments).
//   - Receiving: callback.go (HTTP mode: the headers verified before the
//     body is read, the message stored before the 200), sign.go (Sign, the
//     signature and timestamp check, the single-use proof), stream.go
//     (Stream mode: one session, each frame acked only after Accept
//     returned), cardcallback.go (a tap on a card's button, from the
//     stream's card topic, into a click and its ack's answer), inbound.go (a robot message decoded into an Inbound, its
//     ReplyTo, the robot's own @-mention removed), files.go (pictures,
//     rich text, files, voice and video as media parts, and FetchMedia:
//     a downloadCode exchanged for its download URL, the bytes fetched
//     without the token).
//   - Sending: send.go (a part through the session webhook while it is
//     valid, else the robot OpenAPI; the asker mentioned in groups),
//     webhook.go (the session webhook's client: the fetch guard, on the
//     configured API hosts only),
//     card.go (the live reply: an AI card created when the message is
//     stored and streamed into), cards.go (confirmation and choice cards,
//     channels.Carder: a button template's card created and delivered,
//     redrawn later for everyone; Stream mode only), media.go (image upload and image
//     messages), openapi.go (the OpenAPI and legacy API client: the app
//     token through the shared cache, APIError, which errors are
//     permanent).
//   - Directory: directory.go (a user's departments, cached, for skill
//     access rules).
//   - Operations: doctor.go (Check, for `hermes doctor`), selftest.go (the
//     console's self-test), push.go (PushAddress for scheduled reports).
package dingtalk
