// Package wecomtest is a fake WeCom for tests. It speaks the real wire
// format over HTTP and websockets (httptest), so the code under test runs
// its real client path: gettoken, message/send, errcodes, duplicate
// suppression, media upload, the AI bot's callbacks, response_urls and
// long connection. It is for tests only, and it fakes WeCom, not the
// gateway (that is chantest.Sink).
//
// Files, by concept:
//   - The API of self-built apps: server.go (Server: tokens, message/send
//     with WeCom's duplicate check, user/get, injected errcodes), media.go
//     (temporary media uploads, checked as WeCom checks them), faults.go
//     (LoseAnswers: a send accepted whose answer never arrives), cards.go
//     (template cards: message/send's checks and response_code,
//     update_template_card spending each code once, click events and the
//     passive reply as WeCom reads it).
//   - App callbacks: callback.go (EncryptedCallback and VerifyURLQuery as
//     WeCom sends them, message XML builders, AppReplyTo), vector.go (the
//     official test vector and MustCrypto, for apps, bots and wxbiz).
//   - AI bots: aibot.go (BotMessage bodies of every type, a tap's
//     TemplateCardEvent among them, BotCallback requests, OpenBotReply for
//     passive replies, ResponseURLServer; template cards checked as WeCom
//     checks them), aibot_ws.go (BotWSServer: the long-connection gateway,
//     subscriptions, acks, pushed callbacks, one card update per event's
//     req_id, takeovers), aibot_media.go (media upload over the socket).
//   - Waiting: changes.go (waitUntil over chantest.Changes, with the
//     fake's lock held around the condition).
package wecomtest
