// Package chantest holds the in-memory halves of the channel boundary for
// tests, so each side is tested against the other's contract: the
// gateway's pipeline against a channel that records what it is sent, and a
// platform package against a sink that behaves as the gateway's does. It
// is for tests only; it speaks no platform's wire format (the fakes of
// those are wecomtest, dingtalktest and feishutest, next to each platform).
//
// Files, by concept:
//   - The channel side: chantest.go (Channel, for the gateway's pipeline
//     tests: messages go in through the gateway's Sink as a platform would
//     hand them over, and every Send is recorded, so ordering, splitting,
//     group rules and commands can be tested without a wire format; it
//     pushes, self-tests and runs doctor checks too).
//   - The gateway side: sink.go (Sink, for a platform package's tests: one
//     store per account and message id, scripted progress, Shown and
//     refusals recorded), tokens.go (TokenCache, an in-memory
//     channels.TokenCache).
//   - Waiting: changes.go (Changes, how every fake here and in the
//     platforms' fakes wakes a test waiting for something to be recorded).
//   - Test support: support.go (a settable Clock, a LogBuffer, latency
//     percentiles for benchmarks), png.go (NoisePNG, a picture of a chosen
//     size).
package chantest
