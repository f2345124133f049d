package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Address is a conversation of one account that a reply goes to: an
// inbound message's (its ReplyTo as the channel wrote it) or a push
// address (channels.Pusher).
type Address struct {
	Channel, Account, ChatID string
	ReplyTo                  json.RawMessage
}

// AddressOf is the conversation in came from.
func AddressOf(in channels.Inbound) Address {
	return Address{Channel: in.Channel, Account: in.Account, ChatID: in.ChatID, ReplyTo: in.ReplyTo}
}

// orderKey is the conversation whose replies go out in order: one chat of
// one account.
func (a Address) orderKey() string { return a.Channel + "/" + a.Account + "/" + a.ChatID }

// Outbox is the one way anything produces a reply (an answer, an async
// result, a report): the reply's parts and the job that delivers them are
// written in the producer's transaction, so a reply is queued exactly when
// what produced it commits, and goes out once, in its conversation's order.
type Outbox struct {
	// channels are the gateway's, by name: a reply is shaped for its own.
	channels map[string]channels.Channel
	jobs     *Jobs
}

// Queue shapes text for the address's channel (its markdown dialect, cut
// into parts within its size limit, never inside a character or a code
// fence) and stores it under key, the reply's idempotency key, with its
// delivery job, in tx. It returns how many parts the reply has.
//
// Errors wrap errNoChannel when the address's channel is not configured.
func (o *Outbox) Queue(ctx context.Context, tx pgx.Tx, key string, to Address, text string) (parts int, err error) {
	ch, ok := o.channels[to.Channel]
	if !ok {
		return 0, fmt.Errorf("%w: %q (reply %s)", errNoChannel, to.Channel, key)
	}
	lim := ch.Limits(to.Account)
	text = channels.AdaptMarkdown(text, lim.Dialect)
	r := o.reply(key, to, cmp.Or(lim.Format, channels.FormatText))
	r.Parts = channels.SplitMarkdown(text, lim.MaxBytes)
	return len(r.Parts), o.insert(ctx, tx, r)
}

// QueueImage stores img as a reply of its own under key, after whatever
// the conversation has queued before it, in tx. The channel must take
// images (Limits.Images).
func (o *Outbox) QueueImage(ctx context.Context, tx pgx.Tx, key string, to Address, img *channels.Image) error {
	r := o.reply(key, to, channels.FormatImage)
	r.Image = img
	return o.insert(ctx, tx, r)
}

// QueueCard stores a card (cardID, already stored) whose body is text as
// a reply of its own under key, with its delivery job, in tx. Delivery
// sends it through the channel's channels.Carder, or as text where the
// card cannot be sent (cards_deliver.go).
func (o *Outbox) QueueCard(ctx context.Context, tx pgx.Tx, key string, to Address, cardID, text string) error {
	ch, ok := o.channels[to.Channel]
	if !ok {
		return fmt.Errorf("%w: %q (card %s)", errNoChannel, to.Channel, cardID)
	}
	r := o.reply(key, to, channels.FormatCard)
	r.Parts, r.CardID = []string{channels.AdaptMarkdown(text, ch.Limits(to.Account).Dialect)}, cardID
	return o.insert(ctx, tx, r)
}

// QueueCardUpdate stores the one later update of card cardID (its title
// and text once its question is resolved), after whatever its
// conversation has queued before, in tx.
func (o *Outbox) QueueCardUpdate(ctx context.Context, tx pgx.Tx, cardID string, to Address, title, text string) error {
	b, err := json.Marshal(cardUpdate{Title: title, Text: text})
	if err != nil {
		return fmt.Errorf("gateway: card update %s: %w", cardID, err)
	}
	r := o.reply(cardUpdateKey(cardID), to, channels.FormatCardUpdate)
	r.Parts, r.CardID = []string{string(b)}, cardID
	return o.insert(ctx, tx, r)
}

// cardUpdate is the text of a FormatCardUpdate part.
type cardUpdate struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Lock holds, until tx ends, the right to queue replies to the
// conversations of to: a producer queueing to several chats in one
// transaction (a report to its targets) keeps another producer's parts
// from interleaving with its own, since a conversation's parts go out in
// the order their rows were written.
func (o *Outbox) Lock(ctx context.Context, tx pgx.Tx, to ...Address) error {
	keys := make([]string, len(to))
	for i, a := range to {
		keys[i] = a.orderKey()
	}
	return store.LockConversations(ctx, tx, keys)
}

func (o *Outbox) reply(key string, to Address, format string) store.Reply {
	return store.Reply{Key: key, Channel: to.Channel, Account: to.Account, ReplyTo: to.ReplyTo,
		OrderKey: to.orderKey(), Format: format}
}

// insert writes r's parts in tx with their delivery job, or, for the
// answer of a run that sends it itself (inline.go), with their time.
// Accounts whose sends go through the replica holding their one
// connection keep the job.
func (o *Outbox) insert(ctx context.Context, tx pgx.Tx, r store.Reply) error {
	inl := inlineOf(ctx)
	if inl != nil && !o.jobs.isExclusive(r.Channel, r.Account) {
		r.InlineUntil, r.InlineFrom = &inl.until, inl.from
		inserted, err := store.InsertOutbox(ctx, tx, r)
		if err != nil || inserted {
			inl.replies = append(inl.replies, store.InlineReply{Key: r.Key, Channel: r.Channel, Account: r.Account, OrderKey: r.OrderKey})
			return err
		}
	} else if _, err := store.InsertOutbox(ctx, tx, r); err != nil {
		return err
	}
	return o.jobs.enqueueDelivery(ctx, tx, r.Channel, r.Account, r.Key)
}
