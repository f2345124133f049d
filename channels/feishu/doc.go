// Package feishu is the Feishu / Lark (飞书) platform: custom apps (企业自建应用)
// with the bot capability, receiving im.message.receive_v1 either by HTTP
// event subscription (v2, encrypted and signed) or by long connection
// (长连接), with the images, files and voice they hold, and answering with
// the reply API, as a CardKit streaming card while the answer grows when
// streaming is on. Everything Feishu-specific lives here: the `feishu:`
// YAML section, the event route, the crypto, the long-connection frames and
// the OpenAPI calls. Like every platform package it stores nothing and runs
// no agent: a message goes to the gateway through channels.Sink.
//
// Neither the official SDK's event dispatcher nor its ws client is used.
// The ws client (oapi-sdk-go v3.5.3) blocks forever in Start, cannot be
// stopped with a context, never notices a socket that went silent (no read
// deadline), and reconnects with time.Sleep; the long-connection protocol
// is small (one endpoint call, protobuf frames, ping/pong, fragments), so
// ws.go speaks it with coder/websocket and frame.go encodes the frames with
// protowire. The OpenAPI calls are plain JSON over HTTP so that tokens go
// through the gateway's shared token cache.
//
// Files, by concept:
//   - The platform: feishu.go (ChannelName, the two clouds' domains,
//     Feishu's documented limits, the defaults, the sentinel errors),
//     config.go (the `feishu:` section, Platform and Build), channel.go
//     (Channel: every app an account, with Limits, Send, Routes,
//     Connections and Departments), app.go (App: one app's codec, client
//     and streams; the bot's own open_id; the departments cache).
//   - Receiving events: http.go (the event route: URL verification, then
//     signature, decryption and the event stored before the answer),
//     crypto.go (Crypto: the Encrypt Key's decryption and signature),
//     event.go (an im.message.receive_v1 event decoded into an Inbound,
//     mentions resolved, its ReplyTo), cardaction.go (a card.action.trigger,
//     a tap on a card's button, decoded into a click Inbound, the clicker
//     its operator.open_id; the toast and card that answer it), files.go (what besides text a
//     message holds: images, files, voice, video and posts as parts,
//     their bytes fetched in the worker; the message a reply quotes).
//   - The long connection: ws.go (one session: the endpoint call, then the
//     socket), wsconn.go (reading frames, each event stored on a handler
//     of its own and acked only after Accept returned, pings), frame.go
//     (Frame, the protobuf frame, with protowire), fragments.go (payloads
//     split over frames, reassembled within bounds).
//   - Sending: send.go (App.Send: a post or a text reply, the asker
//     mentioned in groups, one uuid per part against duplicates),
//     cards.go (channels.Carder: confirmation and choice cards as card
//     JSON 1.0 with update_multi, their later PATCH for everyone),
//     stream.go (the live reply: a CardKit streaming card), media.go
//     (image upload and image replies), api.go (the OpenAPI client: the
//     tenant token through the shared cache, APIError, which codes are
//     permanent).
//   - Operations: doctor.go (Check, for `hermes doctor`, and the console's
//     SelfTest), push.go (PushAddress for scheduled reports).
package feishu
