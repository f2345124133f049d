package gatewaytest

import (
	"strings"
	"testing"
	"time"
)

// Chat talks to the started gateway as users of the test WeCom app, one
// message at a time, each waited for until its reply is delivered.
type Chat struct {
	H *Harness
	// Clock signs the callbacks: the gateway's Deps.Now.
	Clock func() time.Time
	seq   int
}

// Say sends text as user and returns the reply it gets.
func (c *Chat) Say(t *testing.T, user, text string) string {
	t.Helper()
	c.seq++
	ctx := WithTimeout(t, 30*time.Second)
	before := len(c.H.WeComAPI.Messages())
	u, body := c.H.CallbackRequest(TextXML(user, text, "c-"+strings.Repeat("x", c.seq)), c.Clock())
	if status, _ := Post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	msgs, err := c.H.WeComAPI.WaitMessages(ctx, before+1)
	if err != nil {
		t.Fatal(err)
	}
	c.H.WaitIdle(ctx)
	m := msgs[len(msgs)-1]
	if m.ToUser != user {
		t.Fatalf("reply went to %s, want %s", m.ToUser, user)
	}
	return m.Content
}
