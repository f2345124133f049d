package gateway

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"
)

// An API client names its sessions (X-Session-Id, else "user"), but the
// name is only ever a part of the session's chat id, never the chat id:
// access rules (access.chats) and skill backends (the signed
// X-Hermes-Chat-Id) take a chat id as a conversation the platform vouches
// for, and a key holder who could send a group's chat id would borrow that
// group's skills and data. So an API session's chat id is
//
//	api:<account>:<user_id>:<session>
//
// each part query-escaped, so none holds a ':' and the id splits back into
// exactly the key's identity and the client's name. It cannot equal a
// platform's chat id (none starts with "api:"; WeCom, DingTalk and Feishu
// ids hold no ':'), nor another key's (keys differ in account or user_id,
// validateSessions), and two keys sending the same name get two sessions.

// defaultAPISession is the session of a key whose requests name none.
const defaultAPISession = "default"

// apiChatPrefix starts the chat id of every API session.
const apiChatPrefix = apiChannel + ":"

// apiChatID is the chat id of the session a key's client names session.
func apiChatID(key OpenAIKey, session string) string {
	return apiChatPrefix + strings.Join([]string{
		url.QueryEscape(accountOf(key)), url.QueryEscape(key.UserID),
		url.QueryEscape(cmp.Or(session, defaultAPISession)),
	}, ":")
}

// validateSessions refuses two keys of the same identity (account and
// user_id): they would name the same sessions, and one key's holder could
// read the other's history. Rotating a key means a new name for the new
// one; its sessions start afresh.
func (c *OpenAIAPIConfig) validateSessions(bad func(key, format string, args ...any)) {
	first := map[[2]string]int{}
	for i, k := range c.Keys {
		id := [2]string{accountOf(k), k.UserID}
		if j, ok := first[id]; ok {
			bad(fmt.Sprintf("openai_api.keys[%d]", i), "same name and user_id as openai_api.keys[%d]; give each key its own name (it names the key's sessions)", j)
			continue
		}
		first[id] = i
	}
}
