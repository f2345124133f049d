package media

import (
	"cmp"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
)

// WithQuote puts the message the user quoted before text, marked as
// quoted, with its sender. The channel vouches that it is of the same
// chat (channels.Quote).
func WithQuote(q *channels.Quote, text string, words config.MediaMessages) string {
	if q == nil || q.Text == "" {
		return text
	}
	head := words.QuotedUnknown
	if who := cmp.Or(q.SenderName, q.SenderID); who != "" {
		head = fmt.Sprintf(words.Quoted, who)
	}
	return head + "\n" + q.Text + "\n\n" + text
}
