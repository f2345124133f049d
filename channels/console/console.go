package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// ChannelName is Inbound.Channel for terminal messages.
const ChannelName = "console"

// maxTextBytes is generous: a terminal has no platform limit, and one part
// per reply keeps the REPL simple.
const maxTextBytes = 64 << 10

// Channel prints replies to a writer and reports each delivery.
type Channel struct {
	mu        sync.Mutex
	w         io.Writer
	prefix    string
	delivered chan channels.Outbound
	session   string
	seq       atomic.Int64
	files     sync.Map // attachment id → consoleFile (the terminal's "upload")
}

type consoleFile struct {
	data []byte
	name string
}

// New returns a console channel printing to w, each reply prefixed.
func New(w io.Writer, prefix string) *Channel {
	return &Channel{
		w:         w,
		prefix:    prefix,
		delivered: make(chan channels.Outbound, 64),
		session:   fmt.Sprintf("%x", time.Now().UnixNano()),
	}
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return ChannelName }

// Limits implements channels.Channel: a terminal shows plain text of any
// length.
func (c *Channel) Limits(string) channels.Limits {
	return channels.Limits{MaxBytes: maxTextBytes, Format: channels.FormatText, Dialect: channels.DialectStandard}
}

// Send prints one reply and reports it on Delivered.
func (c *Channel) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	c.mu.Lock()
	_, err := fmt.Fprintf(c.w, "%s%s\n", c.prefix, out.Text)
	c.mu.Unlock()
	if err != nil {
		return channels.SendResult{}, fmt.Errorf("console: %w", err)
	}
	select {
	case c.delivered <- out:
	default: // nobody is waiting; the text is on screen anyway
	}
	return channels.SendResult{}, nil
}

// Report prints a progress line (a tool being called) before the reply.
func (c *Channel) Report(_ context.Context, _ string, _ json.RawMessage, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, "  … %s\n", text)
}

// Delivered reports each reply after it has been printed.
func (c *Channel) Delivered() <-chan channels.Outbound { return c.delivered }

// Message builds the Inbound for one line typed by user. Each call gets a
// new message id unique to this process run.
func (c *Channel) Message(user channels.Identity, account, text string) channels.Inbound {
	chat := "console-" + user.UserID
	return channels.Inbound{
		Channel:  ChannelName,
		Account:  account,
		MsgID:    fmt.Sprintf("%s-%d", c.session, c.seq.Add(1)),
		MsgType:  channels.TypeText,
		ChatID:   chat,
		ChatType: channels.ChatSingle,
		Sender:   user,
		Text:     text,
		ReplyTo:  json.RawMessage(`{}`), // one terminal: nothing to address
	}
}

var _ channels.MediaFetcher = (*Channel)(nil)

// File is an attachment typed into the terminal: its kind
// (channels.MediaImage, MediaFile), name and bytes.
type File struct {
	Kind, Name string
	Data       []byte
}

// MessageWith builds the Inbound of a message with text and files (a
// screenshot, a PDF), in order: what a platform's message with
// attachments becomes. The files are kept for FetchMedia.
func (c *Channel) MessageWith(user channels.Identity, account, text string, files ...File) channels.Inbound {
	in := c.Message(user, account, text)
	in.MsgType = channels.TypeMedia
	if text != "" {
		in.Parts = append(in.Parts, channels.Part{Text: text})
	}
	for _, f := range files {
		id := fmt.Sprintf("%s-f%d", c.session, c.seq.Add(1))
		c.files.Store(id, consoleFile{data: f.Data, name: f.Name})
		ref, _ := json.Marshal(id) // a string: it always marshals
		in.Parts = append(in.Parts, channels.Part{Media: &channels.MediaRef{Kind: f.Kind, Ref: ref, Name: f.Name}})
	}
	return in
}

// FetchMedia returns a file MessageWith kept.
func (c *Channel) FetchMedia(_ context.Context, _ string, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	var id string
	_ = json.Unmarshal(ref.Ref, &id)
	v, ok := c.files.Load(id)
	if !ok {
		return channels.Attachment{}, fmt.Errorf("console: file %q: %w", id, channels.ErrMediaExpired)
	}
	f := v.(consoleFile)
	if int64(len(f.data)) > limit {
		return channels.Attachment{}, fmt.Errorf("console: file %q: %w", id, channels.ErrMediaTooLarge)
	}
	return channels.Attachment{Data: f.data, Name: f.name}, nil
}
