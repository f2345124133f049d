package channels

import "context"

// Check is one finding of `hermes doctor`: what was checked, whether it
// passed, what was seen, and for a failure what the operator should do.
// Detail and Fix never hold a secret.
type Check struct {
	Name   string // e.g. "wecom/app-hr: access token"
	OK     bool
	Detail string // what was seen: "token fetched", "errcode 40001: invalid app secret"
	Fix    string // for a failure: the key to change or the console page to visit
}

// Doctor is a channel that can check its own setup against the platform:
// credentials (fetch a token), API reachability, the callback crypto
// configuration. Check calls the platform but sends no message.
type Doctor interface {
	Check(ctx context.Context) []Check
}
