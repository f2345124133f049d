// Package channels is the boundary between the gateway and the chat
// platforms. A platform package (channels/wecom, channels/dingtalk,
// channels/feishu, channels/console) owns everything about its platform:
// its YAML section, how messages arrive (HTTP routes or a long
// connection), how replies are sent and the limits they obey. The gateway
// knows only the interfaces in this package, and a platform package never
// imports the gateway, the agent or the store: what is shared between
// platforms (the reconnect loop, reply splitting, the refusal sentinels,
// the live-reply loop) is written once here, so that no platform keeps a
// copy of its own.
//
// The flow, from a platform's point of view:
//
//   - A callback or frame is verified and decoded into an Inbound, then
//     handed to Sink.Accept, which returns only after the message and the
//     job that will answer it have committed. Only then is the platform
//     answered (or the frame acked).
//   - The gateway's workers run the agent and write the reply to a durable
//     outbox; the delivery layer splits it to the channel's Limits and
//     calls Channel.Send once per part, in order, retrying what is
//     retryable.
//   - A platform that shows an answer while it grows does so in one of two
//     ways: the gateway drives its LiveReplier through RunLive (live.go: a
//     card or a stream the channel updates), or the platform polls and the
//     channel answers from Sink.Progress (the WeCom AI bot in callback
//     mode). Either way Limits.LiveDeadline bounds it, and the delivery
//     layer holds the answer's first part back meanwhile.
//
// Files, by concept:
//   - The boundary: channels.go (Inbound, Receipt, Progress and Sink;
//     Channel, Outbound and Limits, and the optional interfaces
//     HTTPReceiver, StreamReceiver, Uploader, Directory, ProgressReporter;
//     Connection, TokenCache, Env, Platform; the shared errors), cards.go
//     (Carder, the optional interface of a channel that shows cards with
//     buttons; Click, a verified tap in an Inbound; CardAnswer, what Accept
//     says the channel answers it with).
//   - Refusals: refusal.go (what a refused callback failed: the sentinels,
//     the one mapping to check words, the timestamp window), httpstatus.go
//     (errors to HTTP answers: HTTPStatus, Refuse, RefuseRecorded).
//   - Configuration: validate.go (the rules every section shares: account
//     names, base URLs).
//   - URLs from inbound bytes: fetchguard.go (FetchGuard, the one client
//     for a URL that arrives inside a callback or frame: the platform's
//     hosts only, redirects re-checked, the connected address checked at
//     dial time; refusals logged once and counted through
//     Env.FetchRefused).
//   - Long connections: reconnect.go (Reconnect, the one reconnect loop,
//     and its Backoff; each session runs under guard.Run, package guard,
//     so a panic in a goroutine a peer drives costs its connection, not
//     the process).
//   - Live replies: live.go (LiveReplier, Live and RunLive, the one loop
//     that drives every platform's).
//   - Shaping replies: split.go (SplitText, on paragraph and sentence
//     boundaries), format.go (AdaptMarkdown to a dialect, SplitMarkdown
//     that never leaves a code fence open), image.go (CheckImage, and
//     ImageForm for uploads).
//   - Optional capabilities: push.go (Pusher and FirstContactPusher, for
//     scheduled reports), selftest.go (SelfTester, the console's channel
//     self-test), doctor.go (Doctor and Check, for `hermes doctor`).
package channels
