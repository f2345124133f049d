// Package wecom is the WeCom (企业微信) platform: self-built apps (自建应用),
// whose message callbacks it verifies and decrypts into channels.Inbound and
// answers through the active message API, and AI bots (智能机器人), by
// callback or by long connection. Everything WeCom-specific lives here: the
// `wecom:` YAML section, the callback routes, the long connection, the
// crypto and the senders. It stores nothing and runs no agent: a message
// goes to the gateway through channels.Sink, a reply comes back through
// Send or a live reply, and the shared token cache it is given
// (channels.TokenCache) is the gateway's.
//
// The callback crypto (WXBizMsgCrypt) is written by hand in crypto.go because
// silenceper/wechat's util.DecryptMsg rejects an empty receiveid (AI bot) and
// 16-byte padding (DingTalk's callbacks use the same scheme). Sending goes
// through silenceper/wechat/v2/work so the access token is cached and shared
// the way the rest of the ecosystem expects; tokens.go adapts the gateway's
// shared token cache to the cache silenceper takes.
//
// Files, by concept:
//   - The platform: wecom.go (ChannelName, WeCom's documented limits, the
//     sentinel errors), config.go (the `wecom:` section, Platform and
//     Build), channel.go (Channel: every app and bot an account, with Send,
//     Routes, Connections and Departments), crypto.go (Crypto, the
//     WXBizMsgCrypt codec of apps and AI bots).
//   - Self-built apps: app.go (App and NewApp), app_http.go (the callback
//     route: URL verification, a message stored before the empty 200),
//     callback.go (VerifyURL and ParseCallback: signature, timestamp
//     window, decryption, the message XML), send.go (App.Send through
//     message/send, asking for the duplicate check on a retry), media.go
//     (images as temporary media; Upload for apps and bots), directory.go
//     (a user's departments, cached, for skill access rules).
//   - The WeCom API underneath: tokens.go (the shared token cache as
//     silenceper's cache.Cache), apibase.go (the one place silenceper's
//     process-wide state is touched: each app's API base URL and the HTTP
//     client), errcodes.go (APIError, which errcodes are permanent, and the
//     redaction of secrets from errors).
//   - AI bots: aibot.go (Bot, its limits, its ReplyTo and Send),
//     aibot_inbound.go (a message body decoded into an Inbound, the bot's
//     own @-mention removed), aibot_stream.go (accept: Sink.Accept, then
//     how to answer; the stream a callback-mode bot is polled for),
//     aibot_callback.go (callback mode: URL verification, the encrypted
//     passive reply, stream refreshes answered from Sink.Progress),
//     aibot_send.go (response_url POSTs and aibot_send_msg pushes),
//     aibot_files.go (attachments: their URL fetched through the bot's
//     fetch guard, WeCom's hosts only, and decrypted), aibot_media.go
//     (image upload over the long connection).
//   - The AI bot's long connection: aibot_ws.go (one session: dial,
//     subscribe, ping, each callback frame handled on its own goroutine),
//     aibot_wsconn.go (one websocket: one writer at a time, acks matched to
//     their request by req_id), aibot_live.go (the live reply: the
//     message's stream pushed with aibot_respond_msg).
//   - Operations: doctor.go (Check, for `hermes doctor`), selftest.go (the
//     console's self-test, apps only), push.go (PushAddress for scheduled
//     reports: an app to users, a long-connection bot to chats that wrote
//     to it first).
package wecom
