// Package admin is the operators' pages of a gateway, a feature mounted
// where only operators reach (server.admin_listen, else the one
// listener): the console (web/console) under /console and the status page
// (web) at /. The console gets the gateway's store as its narrow
// console.Store, never the pool. The pages themselves are web and
// web/console; this package only wires them to gateway.Services, and
// cmd/hermes adds it in `hermes serve` alone, the one command that serves
// operators.
//
// Files, by concept:
//   - The feature: admin.go (Feature: the console's texts checked at
//     Attach; what the console and the status page are given of the
//     gateway, the knowledge base among it, and where they are mounted).
//   - Report actions: reports.go (Reports, the console's run-now and
//     pause, done by the reports feature through ServiceReports).
package admin
