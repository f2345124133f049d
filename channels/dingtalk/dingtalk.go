package dingtalk

import (
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// ChannelName is the platform name used in channels.Inbound.Channel.
const ChannelName = "dingtalk"

// Limits taken from DingTalk's documentation.
const (
	// MaxMarkdownBytes: a robot message's content is at most 20000 bytes
	// (robot message documentation; longer content is refused). Replies are
	// split below it.
	MaxMarkdownBytes = 20000
	// GroupMessagesPerMinute: a robot may send 20 messages per minute to
	// one group; past it DingTalk throttles the robot for 10 minutes (robot
	// documentation, protocols.md).
	GroupMessagesPerMinute = 20
	// CallbackTimestampWindow: DingTalk's robot callback documentation
	// asks to refuse a timestamp more than one hour from now.
	CallbackTimestampWindow = time.Hour
	// maxTitleRunes: the markdown title is what a notification shows; the
	// documentation gives no limit, so keep it as short as a preview line.
	maxTitleRunes = 20
)

// Defaults for RobotSection.
const (
	DefaultAPIBaseURL       = "https://api.dingtalk.com"
	DefaultOAPIBaseURL      = "https://oapi.dingtalk.com"
	DefaultStreamDeadline   = 3 * time.Minute
	DefaultCardInterval     = 500 * time.Millisecond
	DefaultCardContentKey   = "content"
	DefaultStreamKeepalive  = 60 * time.Second
	DefaultStreamPingWait   = 5 * time.Second
	DefaultDepartmentsTTL   = 10 * time.Minute
	defaultHTTPTimeout      = 10 * time.Second
	webhookExpiryMargin     = time.Minute // a webhook this close to expiry is not trusted
	tokenKeyPrefix          = "dingtalk:token:"
	defaultTitle            = "回复"
	permissionConsoleMarker = "开发者后台 → 应用开发 → 企业内部应用 → 权限管理"
)

// Sentinel errors that callers branch on; every error the package returns for
// these conditions wraps one of them (test with errors.Is). They wrap the
// shared refusals of package channels, so ErrSignature, ErrStale and ErrCorp
// answer 401 and ErrMalformed 400 (channels.HTTPStatus), and
// channels.RefusalCheck names the check each failed.
var (
	// ErrSignature: the sign header is missing or does not match.
	ErrSignature = fmt.Errorf("dingtalk: %w", channels.ErrSignature)
	// ErrStale: the timestamp header is missing, unparsable or outside the
	// window.
	ErrStale = fmt.Errorf("dingtalk: %w", channels.ErrStale)
	// ErrCorp: a signed message whose senderCorpId is not the robot's
	// corp_id. The body is not covered by the signature, so the corp it
	// names is not trusted to choose whose staff id the sender is.
	ErrCorp = fmt.Errorf("dingtalk: %w", channels.ErrCorp)
	// ErrMalformed: a body or frame that is not the JSON DingTalk sends, or
	// lacks a field that identifies the message.
	ErrMalformed = fmt.Errorf("dingtalk: %w", channels.ErrMalformed)
)
