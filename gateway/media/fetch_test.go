package media_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/media"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestMain waits, after the tests, until their databases are dropped.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// wrongKey is a channel whose attachments never decrypt (an operator's
// wrong key).
type wrongKey struct{}

func (wrongKey) FetchMedia(context.Context, string, channels.MediaRef, int64) (channels.Attachment, error) {
	return channels.Attachment{}, fmt.Errorf("%w: bad padding", channels.ErrMediaUndecryptable)
}

// TestUndecryptableIsLoggedForTheOperatorOnce: an attachment that does not
// decrypt is stored as such and logged once as an error that names the
// account and the key to check; fetching the message again (another
// attempt) logs nothing more.
func TestUndecryptableIsLoggedForTheOperatorOnce(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	in := channels.Inbound{Channel: "wecom", Account: "hr-bot", MsgID: "1", MsgType: channels.TypeMedia, ChatID: "lisi",
		ChatType: "single", Sender: channels.Identity{UserID: "lisi"},
		Parts: []channels.Part{{Media: &channels.MediaRef{Kind: channels.MediaFile, Name: "发票.pdf"}}}}
	id, _, err := store.InsertInbound(ctx, pool, in, store.InboundPending)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for range 2 {
		if err := media.Fetch(ctx, pool, wrongKey{}, store.InboundRow{ID: id, In: in}, options(true).Limits, time.Now, false, log); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[0], "account=hr-bot") ||
		!strings.Contains(lines[0], "encoding_aes_key") {
		t.Errorf("logged:\n%s\nwant one error naming the account and its encoding_aes_key", logs.String())
	}
	if m, err := store.MediaOf(ctx, pool, id); err != nil || m[0].Error != "undecryptable" {
		t.Errorf("stored %+v, %v; want the part recorded as undecryptable", m, err)
	}
}
