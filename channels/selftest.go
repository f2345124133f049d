package channels

import "context"

// SelfTester is a channel that can send a test message on an operator's
// request (the console's channel self-test) and explain the platform's
// answer, so a setup mistake is found without reading code or logs.
type SelfTester interface {
	// SelfTest sends a short test text from account to target (a user id,
	// or a chat id where the platform takes one). A platform refusal is a
	// result with OK false, not an error; errors are for a request that
	// could not be made at all (unknown account: ErrUnknownAccount).
	SelfTest(ctx context.Context, account, target string) (SelfTestResult, error)
}

// SelfTestResult is what the platform answered to a self-test, with
// credentials removed.
type SelfTestResult struct {
	OK bool
	// Raw is the platform's answer as received (JSON, or the transport
	// error), redacted: never a secret or token.
	Raw string
	// Explanation says in an operator's words what failed and how to fix
	// it: which check, which permission to grant, which list to edit.
	Explanation string
}

// SelfTestText is what a self-test sends; operators see it in the chat.
const SelfTestText = "Hermes 自检消息 / Hermes self-test message"
