// Package aibot is the WeCom AI bot (智能机器人): its JSON callbacks
// (callback mode, WeCom POSTs to /wecom/bot/<name>/callback) and its
// long connection (websocket mode, Hermes dials WeCom; no public URL),
// the stream each answer is shown in, and its sends. It stores nothing
// and runs no agent: a message goes to the gateway through channels.Sink.
//
// It is one protocol of the WeCom platform and the `wecom:` section's
// bots: package wecom decodes the section, builds each Bot (New) and
// answers for it as an account of its Channel (Send, Routes, Connections,
// Open, Upload, FetchMedia, PushAddress, Check are the Bot's, dispatched
// by account name). What the bot shares with the self-built app — the
// WXBizMsgCrypt codec and the callback checks, WeCom's errcodes, the
// platform's name — is in package wxbiz, a leaf both import: the bot
// cannot import package wecom, which builds it.
//
// Files, by concept:
//   - The bot: bot.go (Bot and New, its limits, its ReplyTo and Send),
//     config.go (Config, one entry of the section's bots, its defaults and
//     checks), inbound.go (a message body decoded into an Inbound, the
//     bot's own @-mention removed), stream.go (accept: Sink.Accept, then
//     how to answer; the stream a callback-mode bot is polled for).
//   - Callback mode: callback.go (URL verification, the encrypted passive
//     reply, stream refreshes answered from Sink.Progress).
//   - The long connection: ws.go (one session: dial, subscribe, ping,
//     each callback frame handled on its own goroutine), wsconn.go (one
//     websocket: one writer at a time, acks matched to their request by
//     req_id), live.go (the live reply: the message's stream pushed with
//     aibot_respond_msg).
//   - Sending: send.go (response_url POSTs and aibot_send_msg pushes),
//     media.go (image upload over the long connection), files.go
//     (attachments: their URL fetched through the bot's fetch guard,
//     WeCom's hosts only, and decrypted).
//   - Cards: cards.go (the Carder: a confirmation or a choice as a
//     button_interaction template card, sent through the response_url or
//     aibot_send_msg; no later update), cardevent.go (a tap's
//     template_card_event taken by the sink, the clicker from.userid, and
//     answered once with the card redrawn: the passive reply
//     update_template_card, or aibot_respond_update_msg on the tap's
//     req_id).
//   - Operations: doctor.go (Check, for `hermes doctor`), push.go
//     (PushAddress for scheduled reports: chats that wrote to the bot
//     first, websocket mode only).
//
// A group message on the long connection walks seven files here and
// one of package wecom: wsconn.go (the frame read) → ws.go (dispatched on
// its own goroutine under guard.Run) → stream.go and inbound.go (the
// Inbound built, Sink.Accept); then the gateway opens the live reply
// through wecom's channel.go (Channel.Open, by account) → live.go, and
// later parts go through channel.go → bot.go (Send) → send.go
// (aibot_send_msg). Nothing here calls the gateway but through the types
// package channels defines (Sink, Env).
//
// Its fake, the other side of the wire, is in package wecomtest with the
// app's: one fake WeCom for both.
package aibot
