package store

import (
	"context"
	"fmt"
)

// Everything stored about one employee is found from their inbound
// messages: the sessions of the chats they wrote in as themselves, the
// runs that answered them, the outbox parts answering them (reply keys
// inbound:<id>, memory-list:<id> and async:<task>). gateway/privacy
// exports and erases it; ScrubText takes one text out of all of it.

// Person is one employee: the verified sender's corp id and user id (as
// inbound_messages.sender_corp and sender_id hold them). An empty corp id
// is a corp of its own (an API key configured without one), as in
// gateway/memory.
type Person struct {
	CorpID, UserID string
}

// MemoryListKeyPrefix starts the reply key of a memory list sent to its
// owner privately when they asked in a group (gateway/memory); the rest is
// the asking message's inbound id.
const MemoryListKeyPrefix = "memory-list:"

// PersonRows are the keys of everything stored about a person.
type PersonRows struct {
	Inbound  []int64  // inbound_messages they sent
	Sessions []int64  // sessions of the chats they wrote in, as themselves
	Runs     []string // runs answering them, or in their sessions
	Replies  []string // outbox reply keys answering them
}

// RowsOf finds p's rows. Their inbound messages are read by sender, the
// rest by the keys those give, so a request costs one pass over the inbox
// and index look-ups after it.
func RowsOf(ctx context.Context, q Querier, p Person) (PersonRows, error) {
	var r PersonRows
	err := q.QueryRow(ctx, `
WITH own AS (SELECT id, channel, account, chat_id FROM inbound_messages WHERE sender_corp = $1 AND sender_id = $2),
     sess AS (SELECT s.id FROM sessions s
              WHERE s.user_id = $2 AND EXISTS (SELECT 1 FROM own o
                    WHERE o.channel = s.channel AND o.account = s.account AND o.chat_id = s.chat_id))
SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM own), '{}'),
       coalesce((SELECT array_agg(id ORDER BY id) FROM sess), '{}'),
       coalesce((SELECT array_agg(id ORDER BY id) FROM runs
                 WHERE inbound_id IN (SELECT id FROM own) OR session_id IN (SELECT id FROM sess)), '{}'),
       coalesce((SELECT array_agg(k) FROM (
                   SELECT $3 || id AS k FROM own
                   UNION ALL SELECT $4 || id FROM own
                   UNION ALL SELECT 'async:' || a.id FROM async_tasks a WHERE a.inbound_id IN (SELECT id FROM own)) keys), '{}')`,
		p.CorpID, p.UserID, AnswerKeyPrefix, MemoryListKeyPrefix).Scan(&r.Inbound, &r.Sessions, &r.Runs, &r.Replies)
	if err != nil {
		return PersonRows{}, fmt.Errorf("store: find the rows of %s: %w", p, err)
	}
	return r, nil
}

func (p Person) String() string { return p.CorpID + "/" + p.UserID }
