package feishu

import (
	"context"
	"math/rand/v2"
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
	// backoff is the wait before each reconnection, the last repeating;
	// reset once a connection has worked.
	backoff []time.Duration
	// fragmentTTL drops the fragments of a payload not completed in time
	// (fragments.go).
	fragmentTTL time.Duration
}

var defaultWSTimings = wsTimings{
	ping:        2 * time.Minute,
	pongWait:    30 * time.Second,
	backoff:     []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute},
	fragmentTTL: 10 * time.Second,
}

// maxFrameBytes bounds one frame; events are a few KiB, and larger payloads
// come in fragments. A frame past it ends the socket (the websocket
// library closes it); within it, a payload over maxPayloadBytes is refused
// and the socket stays up.
const maxFrameBytes = 4 << 20

// endpointPath is where a client asks for its connection URL.
const endpointPath = "/callback/ws/endpoint"

// runConnection keeps the app's long connection up until ctx ends,
// reconnecting with backoff; it returns nil when ctx ends.
func (a *App) runConnection(ctx context.Context, sink channels.Sink) error {
	if _, err := a.botOpenID(ctx); err != nil {
		a.log.Warn("feishu: bot identity not known yet; fetched again with the first mention", "err", err)
	}
	fails := 0
	for {
		worked, err := a.connectOnce(ctx, sink)
		if ctx.Err() != nil {
			return nil
		}
		// A connection that ended in a panic did not work: a peer that
		// causes one every time meets a growing backoff.
		panicked := a.env.CountPanic(ChannelName, a.cfg.Name, err)
		if worked && !panicked {
			fails = 0
		}
		wait := a.ws.backoff[min(fails, len(a.ws.backoff)-1)]
		wait += time.Duration(rand.Int64N(int64(wait)/4 + 1)) // replicas do not reconnect in step
		fails++
		if panicked {
			a.log.Error("feishu: long connection ended by a panic; reconnecting", "in", wait, "err", err)
		} else {
			a.log.Warn("feishu: long connection lost; reconnecting", "in", wait, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

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
