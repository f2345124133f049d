package dingtalk

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Config is the `dingtalk:` section of hermes.yaml. Every key is documented,
// with its default, in hermes.example.yaml.
type Config struct {
	// TimestampWindow: HTTP callbacks whose timestamp header is further than
	// this from now, either way, are refused. Default 1h (DingTalk's rule).
	// A (timestamp, sign) pair is accepted for one message only; its claim
	// is kept this long after the timestamp.
	TimestampWindow time.Duration `yaml:"timestamp_window"`
	// Robots are the enterprise internal app robots, of one corp or several.
	Robots []RobotSection `yaml:"robots"`
}

// Robot modes.
const (
	ModeHTTP   = "http"
	ModeStream = "stream"
)

// RobotSection is one robot (one enterprise internal app).
type RobotSection struct {
	Name string `yaml:"name"` // required, [a-z0-9-]+; in the callback path
	// Mode is "http" (DingTalk POSTs to /dingtalk/<name>/callback; needs a
	// public URL) or "stream" (Hermes keeps long connections; no public
	// URL). Default http. Stream is the safer for personal data: the HTTP
	// signature covers the timestamp, not the body.
	Mode      string `yaml:"mode"`
	AppKey    string `yaml:"app_key"`    // required: AppKey, a.k.a. Client ID
	AppSecret string `yaml:"app_secret"` // required: AppSecret (Client Secret); use ${ENV}
	// RobotCode is the robot's code for the OpenAPI; default app_key (an
	// internal app's robot has its AppKey as code).
	RobotCode string `yaml:"robot_code"`
	// CorpID is the corp the app belongs to, and every sender's corp: a
	// message whose senderCorpId names another is refused. Required.
	CorpID string `yaml:"corp_id"`
	// RobotName is the robot's display name; a leading "@<name>" left in a
	// message's text is removed. Optional: DingTalk usually removes it.
	RobotName string `yaml:"robot_name"`
	// CardTemplateID turns on streaming answers in an AI card built from
	// this template (卡片平台). Empty: plain markdown replies.
	CardTemplateID string `yaml:"card_template_id"`
	// ButtonCardTemplateID turns on confirmation and choice cards (确认 /
	// 取消, or a question's options, as buttons; cards.go): the id of a
	// template built and published in 卡片平台 for this app, with the
	// variables the README lists, e.g. "4f2c...-9e1d.schema". Stream mode
	// only: an HTTP-mode robot keeps the text confirmation (the doctor says
	// why). Empty: the text confirmation.
	ButtonCardTemplateID string `yaml:"button_card_template_id"`
	// CardContentKey is the template's markdown variable the answer
	// streams into. Default "content".
	CardContentKey string `yaml:"card_content_key"`
	// CardInterval is how often the card is updated while the answer
	// grows. Default 500ms.
	CardInterval time.Duration `yaml:"card_interval"`
	// StreamDeadline: a card stops streaming this long after the message
	// arrived; the answer then comes as a markdown message. Default 3m.
	StreamDeadline time.Duration `yaml:"stream_deadline"`
	// Keepalive (stream mode): after this long without a frame, the
	// connection is pinged; no pong within PingWait replaces it. Defaults
	// 60s and 5s.
	Keepalive time.Duration `yaml:"keepalive"`
	PingWait  time.Duration `yaml:"ping_wait"`
	// APIBaseURL is the OpenAPI base, default https://api.dingtalk.com.
	APIBaseURL string `yaml:"api_base_url"`
	// OAPIBaseURL is the legacy API base (user/get for departments),
	// default https://oapi.dingtalk.com.
	OAPIBaseURL string `yaml:"oapi_base_url"`
}

// Platform registers the `dingtalk:` section.
var Platform = channels.NewPlatform[Config](ChannelName)

// ApplyDefaults fills every unset key with its default.
func (c *Config) ApplyDefaults() {
	if c.TimestampWindow <= 0 {
		c.TimestampWindow = CallbackTimestampWindow
	}
	for i := range c.Robots {
		r := &c.Robots[i]
		def := func(v *string, d string) {
			if strings.TrimSpace(*v) == "" {
				*v = d
			}
		}
		defDur := func(v *time.Duration, d time.Duration) {
			if *v <= 0 {
				*v = d
			}
		}
		def(&r.Mode, ModeHTTP)
		def(&r.RobotCode, r.AppKey)
		def(&r.CardContentKey, DefaultCardContentKey)
		def(&r.APIBaseURL, DefaultAPIBaseURL)
		def(&r.OAPIBaseURL, DefaultOAPIBaseURL)
		r.APIBaseURL = strings.TrimRight(r.APIBaseURL, "/")
		r.OAPIBaseURL = strings.TrimRight(r.OAPIBaseURL, "/")
		defDur(&r.CardInterval, DefaultCardInterval)
		defDur(&r.StreamDeadline, DefaultStreamDeadline)
		defDur(&r.Keepalive, DefaultStreamKeepalive)
		defDur(&r.PingWait, DefaultStreamPingWait)
	}
}

// validate reports every problem at once, each naming its key, e.g.
// "dingtalk.robots[0].app_secret: required".
func (c *Config) Validate() error {
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, ChannelName+"."+key+": "+fmt.Sprintf(format, args...))
	}
	if len(c.Robots) == 0 {
		bad("robots", "required, at least one robot")
	}
	seen := map[string]bool{}
	for i, r := range c.Robots {
		key := fmt.Sprintf("robots[%d]", i)
		if err := channels.CheckAccountName(r.Name); err != nil {
			bad(key+".name", "%v", err)
		} else if seen[r.Name] {
			bad(key+".name", "duplicate name %q", r.Name)
		}
		seen[r.Name] = true
		for _, f := range [][2]string{{"app_key", r.AppKey}, {"app_secret", r.AppSecret}, {"corp_id", r.CorpID}} {
			if strings.TrimSpace(f[1]) == "" {
				bad(key+"."+f[0], "required")
			}
		}
		if r.Mode != ModeHTTP && r.Mode != ModeStream {
			bad(key+".mode", "must be http or stream, got %q", r.Mode)
		}
		for _, f := range [][2]string{{"api_base_url", r.APIBaseURL}, {"oapi_base_url", r.OAPIBaseURL}} {
			if _, err := channels.ParseBaseURL(f[1], "http", "https"); err != nil {
				bad(key+"."+f[0], "%v", err)
			}
		}
		if r.PingWait >= r.Keepalive {
			bad(key+".ping_wait", "must be shorter than keepalive (%s), got %s", r.Keepalive, r.PingWait)
		}
		if r.ButtonCardTemplateID != "" && !validTemplateID(r.ButtonCardTemplateID) {
			bad(key+".button_card_template_id", "must be a card template id of 卡片平台 (letters, digits, '-' and '_', ending in .schema), got %q", r.ButtonCardTemplateID)
		}
		if r.CardTemplateID != "" && r.CardInterval >= r.StreamDeadline {
			bad(key+".card_interval", "must be shorter than stream_deadline (%s), got %s", r.StreamDeadline, r.CardInterval)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Build makes the channel of every configured robot. The robot starts
// nothing that outlives a call or its connection's session, so ctx is not
// kept.
func (c *Config) Build(_ context.Context, env channels.Env) (channels.Channel, error) {
	ch := &Channel{robots: map[string]*robot{}}
	for i, s := range c.Robots {
		cache, err := env.TokenCache(s.AppSecret)
		if err != nil {
			return nil, fmt.Errorf("%s.robots[%d]: %w", ChannelName, i, err)
		}
		r := newRobot(s, c.TimestampWindow, cache, env)
		ch.robots[s.Name] = r
	}
	return ch, nil
}
