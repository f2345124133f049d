// Package wecom is the WeCom (企业微信) platform: self-built apps (自建应用),
// whose message callbacks it verifies and decrypts into channels.Inbound
// and answers through the active message API, and AI bots (智能机器人),
// which it builds from the same section through package aibot. It owns
// the `wecom:` YAML section and the Channel, in which every app and bot is
// an account: a bot's calls are dispatched to its aibot.Bot. It stores
// nothing and runs no agent: a message goes to the gateway through
// channels.Sink, a reply comes back through Send or a live reply, and the
// shared token cache it is given (channels.TokenCache) is the gateway's.
//
// The WeCom code is three packages, one protocol each plus what they
// share: wecom (the section, the Channel, the apps' XML callbacks and
// API), aibot (the AI bot's JSON callbacks and long connection) and wxbiz
// (the WXBizMsgCrypt codec and callback checks, errcodes, the platform's
// name), a leaf both import because wecom builds the bots; wecomtest
// fakes WeCom for both.
//
// The callback crypto (WXBizMsgCrypt, wxbiz/crypto.go) is written by hand
// because silenceper/wechat's util.DecryptMsg rejects an empty receiveid
// (AI bot) and 16-byte padding (DingTalk's callbacks use the same scheme).
// Sending goes through silenceper/wechat/v2/work so the access token is
// cached and shared the way the rest of the ecosystem expects; tokens.go
// adapts the gateway's shared token cache to the cache silenceper takes.
//
// Files, by concept:
//   - The platform: wecom.go (ChannelName, WeCom's documented limits of
//     apps), config.go (the `wecom:` section, Platform and Build; each
//     bot's entry is an aibot.Config), channel.go (Channel: every app and
//     bot an account, with Send, Routes, Connections, Open, Departments
//     and FetchMedia), carder.go (channels.Carder by account: an AI bot's
//     cards; an app shows none there).
//   - Self-built apps: app.go (App and NewApp), app_http.go (the callback
//     route: URL verification, a message stored before the empty 200),
//     callback.go (VerifyURL and ParseCallback: signature, timestamp
//     window, decryption, the message XML), send.go (App.Send through
//     message/send, asking for the duplicate check on a retry), cards.go
//     (the channels.Carder: confirmation and choice template cards sent
//     with message/send, task_id derived from the card id, and redrawn
//     with update_template_card and the send's response_code),
//     cardevent.go (a template_card_event of a Hermes card as a click, and
//     the encrypted update_button passive reply that answers it), media.go
//     (images as temporary media; Upload for apps and bots), app_files.go
//     (an app's attachments through media/get), directory.go (a user's
//     departments, cached, for skill access rules).
//   - The WeCom API underneath: tokens.go (the shared token cache as
//     silenceper's cache.Cache), apibase.go (the one place silenceper's
//     process-wide state is touched: each app's API base URL and the HTTP
//     client), errcodes.go (silenceper's errors read as wxbiz.APIError,
//     and what an app's send does with each errcode), apicall.go (a JSON
//     call silenceper lacks, e.g. update_template_card).
//   - Operations: doctor.go (Check, for `hermes doctor`), selftest.go (the
//     console's self-test, apps only), push.go (PushAddress for scheduled
//     reports: an app to users, a long-connection bot to chats that wrote
//     to it first).
package wecom
