package media

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
)

// maxQuotedSenderBytes bounds the quoted sender's name in its marker.
const maxQuotedSenderBytes = 64

// WithQuote puts the message the user quoted before text, marked as
// quoted, with its sender. The channel vouches that it is of the same
// chat (channels.Quote). The sender's name is the platform's, which its
// owner chose: it is kept on one line and inside its marker ([引用 …]),
// as a file's name is.
func WithQuote(q *channels.Quote, text string, words config.MediaMessages) string {
	if q == nil || q.Text == "" {
		return text
	}
	head := words.QuotedUnknown
	who := channels.TruncateUTF8(markerSafe.Replace(channels.OneLine(cmp.Or(q.SenderName, q.SenderID))), maxQuotedSenderBytes)
	if who = strings.TrimSpace(who); who != "" {
		head = fmt.Sprintf(words.Quoted, who)
	}
	return head + "\n" + q.Text + "\n\n" + text
}
