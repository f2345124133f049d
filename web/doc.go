// Package web holds the browser-facing pages of Hermes, embedded in the
// binary: the status page at /, and the static assets of the operator's
// console (web/console) under web/static. It shows names and paths only,
// never a secret, and mounts nothing itself: gateway/admin serves it where
// only operators reach.
//
// Files, by concept:
//   - Pages and assets: web.go (Status and StatusHandler, the status page
//     from static/index.html; Assets, the console's stylesheet and the
//     vendored htmx).
package web
