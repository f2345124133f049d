package memory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
)

// The memory commands (messages.memory): 「记住 …」 adds, /memory lists,
// /forget N, /forget all and 「忘掉 …」 delete.
const (
	cmdRemember = "remember"
	cmdList     = "list"
	cmdForget   = "forget"
)

// parseCommand recognises a memory command: a remember or forget word
// starting the message (arg: what follows), or a list command alone.
func parseCommand(text string, remember, list, forget []string) (cmd, arg string, ok bool) {
	t := strings.TrimSpace(text)
	if isOneOf(t, list) {
		return cmdList, "", true
	}
	for _, c := range []struct {
		name  string
		words []string
	}{{cmdRemember, remember}, {cmdForget, forget}} {
		for _, w := range c.words {
			if rest, ok := cutPrefixFold(t, w); ok && separated(w, rest) {
				return c.name, strings.TrimFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) && r != '*' }), true
			}
		}
	}
	return "", "", false
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// separated: a word ending in a Latin letter ("/forget") must be followed
// by a space or nothing ("/forgetful" is not the command); a Chinese one
// ("记住") may run on ("记住我在上海").
func separated(word, rest string) bool {
	last := word[len(word)-1]
	if last >= 0x80 || rest == "" {
		return true
	}
	return !(unicode.IsLetter(rune(last)) || unicode.IsDigit(rune(last))) || unicode.IsSpace(rune(rest[0]))
}

// Private implements gateway.CommandFeature: a memory command's text is
// in memories once answered (or was refused as a secret), never kept
// beside them.
func (m *Service) Private() bool { return true }

// Help implements gateway.MemoryFeature: the memory commands' line of
// /help, "" where memory is off.
func (m *Service) Help(account, chatID string) string {
	if !m.cfg().On(account, chatID) {
		return ""
	}
	return m.words().Help
}

// Command implements gateway.MemoryFeature.
func (m *Service) Command(ctx context.Context, in channels.Inbound, inboundID int64) (string, bool, error) {
	w := m.words()
	cmd, arg, ok := parseCommand(in.Text, w.RememberWords, w.ListCommands, w.ForgetCommands)
	if !ok {
		return "", false, nil
	}
	if !m.cfg().On(in.Account, in.ChatID) || in.Sender.UserID == "" {
		return w.Off, true, nil
	}
	owner := ownerOf(in)
	var reply string
	var err error
	switch cmd {
	case cmdRemember:
		reply, err = m.remember(ctx, owner, arg, fmt.Sprintf("inbound:%d", inboundID))
	case cmdList:
		reply, err = m.listHere(ctx, in, inboundID, owner)
	default:
		reply, err = m.forget(ctx, in, inboundID, owner, arg)
	}
	return reply, true, err
}

// remember stores what the user asked to remember, unless it holds a
// secret or a number the masking would hide: neither is ever stored.
func (m *Service) remember(ctx context.Context, o Owner, text, source string) (string, error) {
	w := m.words()
	switch {
	case text == "":
		return w.Usage, nil
	case !storable(text):
		return w.Refused, nil
	case len(text) > MaxTextBytes:
		return w.TooLong, nil
	}
	if err := m.store(ctx, o, Memory{Kind: kindOf(text), Text: text, Source: source}); err != nil {
		return "", err
	}
	return fmt.Sprintf(w.Remembered, text), nil
}

// store adds mem for o, dated now and kept memory.retention, with its
// embedding when memory.embeddings is on, then drops o's oldest beyond
// memory.max_per_user. An endpoint that fails costs the embedding (the
// memory is still recalled by its terms), never the memory.
func (m *Service) store(ctx context.Context, o Owner, mem Memory) error {
	now := m.s.Now()
	mem.Owner, mem.CreatedAt, mem.ExpiresAt = o, now, now.Add(m.cfg().Retention)
	mem.Text = strings.TrimSpace(mem.Text)
	if err := validate(mem); err != nil {
		return err // before a call for a memory Add would refuse
	}
	if m.embedder != nil && mem.Embedding == nil {
		vec, err := m.embedder.Embed(ctx, mem.Text)
		if err != nil {
			m.log().Warn("memory stored without its embedding", "source", mem.Source, "err", err)
		} else {
			mem.Embedding = vec
		}
	}
	if _, err := Add(ctx, m.s.Pool, mem); err != nil {
		return err
	}
	all, err := List(ctx, m.s.Pool, o, now)
	if err != nil || len(all) <= m.cfg().MaxPerUser {
		return err
	}
	var oldest []int64
	for _, old := range all[:len(all)-m.cfg().MaxPerUser] {
		oldest = append(oldest, old.ID)
	}
	_, err = Delete(ctx, m.s.Pool, o, oldest)
	return err
}

// list numbers the user's memories, oldest first.
func (m *Service) list(ctx context.Context, o Owner) (string, error) {
	all, err := List(ctx, m.s.Pool, o, m.s.Now())
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return m.words().None, nil
	}
	lines := make([]string, len(all))
	for i, mem := range all {
		lines[i] = fmt.Sprintf("%d. %s（%s）", i+1, mem.Text, mem.CreatedAt.Format("2006-01-02"))
	}
	return fmt.Sprintf(m.words().List, strings.Join(lines, "\n")), nil
}

// forget deletes by the numbers /memory showed, all of them, or those
// whose text holds the words given, with every stored copy of their texts
// (Forget), in one transaction.
func (m *Service) forget(ctx context.Context, in channels.Inbound, inboundID int64, o Owner, arg string) (string, error) {
	w := m.words()
	if arg == "" {
		return m.listHere(ctx, in, inboundID, o)
	}
	var n int64
	err := store.InTx(ctx, m.s.Pool, func(tx pgx.Tx) error {
		var ids []int64 // nil: all of them
		if !isOneOf(arg, w.AllWords) {
			all, err := List(ctx, tx, o, m.s.Now())
			if err != nil {
				return err
			}
			if ids = chosen(all, arg); ids == nil {
				ids = []int64{}
			}
		}
		var err error
		n, err = Forget(ctx, tx, o, ids)
		return err
	})
	switch {
	case err != nil:
		return "", err
	case n == 0:
		return w.NotFound, nil
	}
	return fmt.Sprintf(w.Forgot, n), nil
}

// listHere answers a list command where it was asked: the list itself in
// a private chat; in a group, whose members must not read what the user
// told the bot in private, nothing of it — the list goes to the user
// privately where the channel can start that chat, else they are told to
// ask there.
func (m *Service) listHere(ctx context.Context, in channels.Inbound, inboundID int64, o Owner) (string, error) {
	text, err := m.list(ctx, o)
	if err != nil || in.ChatType != channels.ChatGroup {
		return text, err
	}
	w := m.words()
	to, ok := m.privateAddress(ctx, in)
	if !ok {
		return w.AskPrivately, nil
	}
	err = store.InTx(ctx, m.s.Pool, func(tx pgx.Tx) error {
		// Keyed by the asking message: a retry of this job queues nothing twice.
		_, err := m.s.Outbox.Queue(ctx, tx, store.MemoryListKeyPrefix+strconv.FormatInt(inboundID, 10), to, text)
		return err
	})
	if err != nil {
		return "", err
	}
	return w.SentPrivately, nil
}

// privateAddress is the private chat of in's sender on in's account, when
// the channel can send there unprompted.
func (m *Service) privateAddress(ctx context.Context, in channels.Inbound) (gateway.Address, bool) {
	return m.pushAddress(ctx, in, channels.ChatSingle, in.Sender.UserID)
}

// pushAddress is a chat (chatID of chatType: a user id for a private chat)
// of in's account that the channel can send to unprompted: it is a
// Pusher, the chat is one it can push to, and on an account that may push
// only where someone wrote first, someone has written there.
func (m *Service) pushAddress(ctx context.Context, in channels.Inbound, chatType, chatID string) (gateway.Address, bool) {
	ch, _ := m.s.Channel(in.Channel)
	p, ok := ch.(channels.Pusher)
	if !ok {
		return gateway.Address{}, false
	}
	if fc, ok := p.(channels.FirstContactPusher); ok && fc.PushNeedsFirstContact(in.Account) {
		wrote, err := store.ChatHasWritten(ctx, m.s.Pool, in.Channel, in.Account, chatType, chatID)
		if err != nil || !wrote {
			return gateway.Address{}, false
		}
	}
	replyTo, err := p.PushAddress(ctx, in.Account, chatType, chatID)
	if err != nil {
		m.log().Info("memory: this chat cannot be sent to unprompted", "channel", in.Channel, "account", in.Account, "err", err)
		return gateway.Address{}, false
	}
	return gateway.Address{Channel: in.Channel, Account: in.Account, ChatID: chatID, ReplyTo: replyTo}, true
}

// chosen are the ids arg names among all: numbers ("2", "1 3", "1，3")
// by position, else every memory whose text contains arg.
func chosen(all []Memory, arg string) []int64 {
	fields := strings.FieldsFunc(arg, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	var ids []int64
	numbers := len(fields) > 0
	for _, f := range fields {
		i, err := strconv.Atoi(f)
		if err != nil {
			numbers = false
			break
		}
		if i >= 1 && i <= len(all) {
			ids = append(ids, all[i-1].ID)
		}
	}
	if numbers {
		return ids
	}
	ids = ids[:0]
	for _, mem := range all {
		if strings.Contains(strings.ToLower(mem.Text), strings.ToLower(arg)) {
			ids = append(ids, mem.ID)
		}
	}
	return ids
}

// errNotStorable is a proposed memory that holds a secret or a masked
// value.
var errNotStorable = errors.New("memory: holds a secret or a personal number")

// storable reports whether text may be kept: the masking would leave it
// as it is (no mobile or ID number), and it names no secret.
func storable(text string) bool {
	return agent.MaskedText(text) == text && !strings.Contains(text, "****") && !holdsSecret(text)
}
