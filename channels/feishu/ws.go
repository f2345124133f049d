package feishu

import (
	"context"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// wsTimings are the long connection's timings; tests shorten them.
type wsTimings struct {
	// ping is the ping interval; Feishu's endpoint answer sets its own
	// (ClientConfig.PingInterval, 120 s today) and the shorter one wins.
	ping time.Duration
	// pongWait is how long past a ping interval the socket may stay silent
	// before it is taken for dead and replaced: Feishu answers every ping
	// with a pong, so a live socket is never silent that long.
	pongWait time.Duration
	// backoff paces the reconnects (channels.Reconnect); the zero value
	// is channels.DefaultBackoff.
	backoff channels.Backoff
	// fragmentTTL drops the fragments of a payload not completed in time
	// (fragments.go).
	fragmentTTL time.Duration
}

var defaultWSTimings = wsTimings{
	ping:        2 * time.Minute,
	pongWait:    30 * time.Second,
	fragmentTTL: 10 * time.Second,
}

// maxFrameBytes bounds one frame; events are a few KiB, and larger payloads
// come in fragments. A frame past it ends the socket (the websocket
// library closes it); within it, a payload over maxPayloadBytes is refused
// and the socket stays up.
const maxFrameBytes = 4 << 20

// endpointPath is where a client asks for its connection URL.
const endpointPath = "/callback/ws/endpoint"

// runConnection is one session of the app's long connection
// (channels.Connection.Run): ask for the endpoint, dial, serve until the
// socket fails or ctx ends. Errors wrap channels.ErrCredentials (the
// endpoint refused the app's id or secret), guard.ErrPanic, or say how
// the connection failed; nil when ctx ended.
func (a *App) runConnection(ctx context.Context, sink channels.Sink) error {
	if _, err := a.botOpenID(ctx); err != nil {
		a.log.Warn("feishu: bot identity not known yet; fetched again with the first mention", "err", err)
	}
	err := a.connectOnce(ctx, sink)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Endpoint codes that refuse the app itself (oapi-sdk-go v3 ws client:
// AuthFailed, Forbidden, NoCredential): a retry cannot help until the
// configuration changes.
var refusedCodes = map[int]bool{514: true, 403: true, 1000040344: true}

// endpointAnswer is the answer of POST /callback/ws/endpoint; an error
// still carries "data":{}.
type endpointAnswer struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data struct {
		URL          string `json:"URL"`
		ClientConfig struct {
			PingInterval int `json:"PingInterval"` // seconds
		} `json:"ClientConfig"`
	} `json:"data"`
}
