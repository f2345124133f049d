package feishu

import (
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// ChannelName is the platform name used in channels.Inbound.Channel.
const ChannelName = "feishu"

// Domains of the two clouds.
const (
	DomainFeishu = "https://open.feishu.cn"
	DomainLark   = "https://open.larksuite.com"
)

// Limits taken from Feishu's documentation.
const (
	// MaxPartBytes: a post (rich text) or card request body may be at most
	// 30 KB ("卡片及富文本消息请求体最大不能超过30KB"); the content is a JSON
	// string inside JSON, so quotes and newlines are escaped twice and a part
	// keeps well under half of that.
	MaxPartBytes = 12 * 1024
	// SendsPerMinute: replies to one user, or by all bots to one group, are
	// limited to 5 QPS ("向同一用户发送消息的限频为 5 QPS、向同一群组发送消息
	// 的限频为群内机器人共享 5 QPS").
	SendsPerMinute = 5 * 60
	// AppSendsPerMinute: the send and reply APIs allow an app 1000 calls a
	// minute (and 50 a second) in all ("1000 次/分钟、50 次/秒").
	AppSendsPerMinute = 1000
	// CardUpdatesPerSecond: a card accepts at most 10 updates per second
	// (CardKit: "单个卡片 10 次/秒"); the streamer stays under it.
	CardUpdatesPerSecond = 10
	// AppCardUpdatesPerSecond: CardKit update calls are limited to 50/s per
	// app; this replica's streams share one budget under it.
	AppCardUpdatesPerSecond = 50
	// CallbackDeadline: Feishu waits 3 s for the answer to an event
	// (HTTP or long connection), then retries (15 s, 5 min, 1 h, 6 h).
	CallbackDeadline = 3 * time.Second
	// MaxReplyUUID: the reply API's uuid (1-hour duplicate suppression) is
	// at most 50 characters.
	MaxReplyUUID = 50
)

// Defaults of the `feishu:` section.
const (
	DefaultStreamDeadline = 3 * time.Minute
	DefaultIDType         = "user_id"
	// DefaultTimestampWindow: Feishu states no window for
	// X-Lark-Request-Timestamp, and its SDK (oapi-sdk-go v3) checks none.
	// Feishu signs each delivery when it sends it (the header is the
	// request's time, with a fresh nonce), so a live event is seconds old;
	// 5 minutes is WeCom's window, and the common webhook tolerance for
	// clock skew. A replay inside the window is a repeat of its message_id,
	// which the gateway stores once.
	DefaultTimestampWindow = 5 * time.Minute
)

// Sentinel errors callers branch on; they wrap the shared refusals of
// package channels, so channels.HTTPStatus answers 401 for ErrSignature,
// ErrStale, ErrToken and ErrOtherApp, 400 for ErrDecrypt and ErrMalformed,
// and channels.RefusalCheck names the check each failed.
var (
	// ErrSignature: X-Lark-Signature missing or not matching.
	ErrSignature = fmt.Errorf("feishu: %w", channels.ErrSignature)
	// ErrStale: X-Lark-Request-Timestamp is not Unix seconds or is outside
	// the timestamp window (a replayed or badly delayed event).
	ErrStale = fmt.Errorf("feishu: %w", channels.ErrStale)
	// ErrToken: the verification token in the event is not the app's.
	ErrToken = fmt.Errorf("feishu: %w", channels.ErrToken)
	// ErrOtherApp: the event's header names another app_id. Like the
	// token, the app_id names the app the event is for: a token check.
	ErrOtherApp = fmt.Errorf("feishu: event of another app: %w", channels.ErrToken)
	// ErrDecrypt: encrypt not base64, not whole blocks, or bad padding.
	ErrDecrypt = fmt.Errorf("feishu: %w", channels.ErrDecrypt)
	// ErrMalformed: a body or event that is not what Feishu sends.
	ErrMalformed = fmt.Errorf("feishu: %w", channels.ErrMalformed)
)
