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
//     them); Heavy, the per-process bound on connection-hungry tests.
//   - wecom.go: the test WeCom app and AI bot, a signed callback, Post.
//   - wait.go: waiting for the queues to empty or a condition to hold,
//     counting rows.
//   - features.go: NewFeatures and FeatureOf.
package gatewaytest
