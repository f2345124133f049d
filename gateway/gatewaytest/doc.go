// Package gatewaytest is the shared harness of the tests that run a whole
// Hermes: the pipeline's tests in gateway and the feature tests beside
// their features (gateway/reports, gateway/openaiapi, gateway/router, ...).
// A Harness is one Hermes on a fresh, migrated Postgres database (see
// storetest) with the outside services it talks to as local httptest
// servers speaking their real wire formats: the WeCom API (wecomtest), an
// OpenAI-compatible model (openaitest) and the demo HR/IT backend.
//
// It is for tests only and tests nothing itself. Files, by concept:
//   - harness.go: Harness and New; the configuration it runs with; Start
//     and its variants (a gateway with every feature, as cmd/hermes wires
//     them); Heavy and the bound on harnesses alive at once, which keep a
//     test process within the server's connections.
//   - wecom.go: the test WeCom app and AI bot, a signed callback, Post.
//   - api.go: the tool router's and the OpenAI-compatible API's keys.
//   - wait.go: waiting for the queues to empty or a condition to hold,
//     counting rows, Accept, the in-memory Channel.
//   - features.go: NewFeatures and FeatureOf.
//   - chat.go, ask.go, botrig.go: conversations (Chat.Say, AskLeave, an AI
//     bot on a long connection with a recording model), Get and Probe.
//   - cards.go: the card tests' skills (a reset that needs 「确认」, a
//     backend that asks which ticket) and their model, for every
//     platform's card tests.
//   - clock.go, memory.go, reports.go: a JumpClock, the memory feature's
//     fake model, the reports' clock, owner and sample report.
package gatewaytest
