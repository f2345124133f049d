package openaiapi

import (
	"cmp"
	"net/url"
	"strings"

	"github.com/hermes-gw/hermes/gateway/config"
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
func apiChatID(key config.OpenAIKey, session string) string {
	return apiChatPrefix + strings.Join([]string{
		url.QueryEscape(accountOf(key)), url.QueryEscape(key.UserID),
		url.QueryEscape(cmp.Or(session, defaultAPISession)),
	}, ":")
}
