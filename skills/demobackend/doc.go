// Package demobackend is a small HR/IT backend for `hermes demo` and tests.
// It answers the sample skills (skills/samples) with canned Chinese data for
// the users zhangsan, lisi and wangwu, and shows how a real backend should
// treat Hermes: verify the signed identity headers, answer only about the
// signed user, never take a user id from the request body, and report
// accepted async work to the callback URL Hermes sent. It is a stand-in
// for the company's systems, not part of the gateway: Hermes reaches it
// only as skills reach any backend, over HTTP.
//
// Files, by concept:
//   - The server: backend.go (Backend, an http.Handler: each request's
//     signature verified before its handler runs, Options, the recorded
//     Calls).
//   - HR: data.go (the demo employees, leave balances, policy search,
//     tickets created and looked up), payslip.go (the signed user's own
//     pay summary, and a refusal for anyone else's).
//   - IT: it.go (password resets, form-encoded; VPN access accepted with
//     HTTP 202 and answered later), async.go (Pending and CompleteAsync:
//     the accepted VPN requests reported to their signed callback URLs).
//   - Totals: reports.go (last week's IT tickets by category and the
//     team's leave this month: the totals scheduled reports send).
package demobackend
