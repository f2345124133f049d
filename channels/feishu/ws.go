package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

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
	// fragmentTTL drops the fragments of a payload never completed.
	fragmentTTL time.Duration
}

var defaultWSTimings = wsTimings{
	ping:        2 * time.Minute,
	pongWait:    30 * time.Second,
	backoff:     []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute},
	fragmentTTL: 10 * time.Second,
}

// maxFrameBytes bounds one frame; events are a few KiB, and larger payloads
// come in fragments.
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
		if worked {
			fails = 0
		}
		wait := a.ws.backoff[min(fails, len(a.ws.backoff)-1)]
		wait += time.Duration(rand.Int64N(int64(wait)/4 + 1)) // replicas do not reconnect in step
		fails++
		a.log.Warn("feishu: long connection lost; reconnecting", "in", wait, "err", err)
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

// connectOnce runs one connection until it fails or ctx ends. worked
// reports whether the platform talked to us (a pong or an event).
func (a *App) connectOnce(ctx context.Context, sink channels.Sink) (worked bool, err error) {
	var ep endpointAnswer
	body := map[string]string{"AppID": a.cfg.AppID, "AppSecret": a.cfg.AppSecret}
	if _, err := a.api.do(ctx, http.MethodPost, endpointPath, nil, "", body, &ep); err != nil {
		return false, fmt.Errorf("feishu: long-connection endpoint: %w", err)
	}
	if ep.Code != 0 || ep.Data.URL == "" {
		return false, fmt.Errorf("feishu: long-connection endpoint: code %d: %s", ep.Code, ep.Msg)
	}
	u, err := url.Parse(ep.Data.URL)
	if err != nil {
		return false, fmt.Errorf("feishu: long-connection URL: %w", err)
	}
	serviceID, _ := strconv.ParseInt(u.Query().Get("service_id"), 10, 32)
	ping := a.ws.ping
	if s := time.Duration(ep.Data.ClientConfig.PingInterval) * time.Second; s > 0 && s < ping {
		ping = s
	}

	conn, _, err := websocket.Dial(ctx, ep.Data.URL, nil)
	if err != nil {
		return false, fmt.Errorf("feishu: dial long connection: %w", err)
	}
	conn.SetReadLimit(maxFrameBytes)
	defer conn.CloseNow()
	a.log.Info("feishu: long connection up", "service_id", serviceID)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var handlers sync.WaitGroup
	defer handlers.Wait()
	go a.pingLoop(ctx, conn, int32(serviceID), ping)

	frags := fragments{m: map[string]*partial{}}
	for {
		rctx, rcancel := context.WithTimeout(ctx, ping+a.ws.pongWait)
		typ, data, err := conn.Read(rctx)
		rcancel()
		if err != nil {
			if ctx.Err() == nil && rctx.Err() != nil {
				err = fmt.Errorf("silent for %s, replacing the socket", ping+a.ws.pongWait)
			}
			return worked, fmt.Errorf("feishu: long connection: %w", err)
		}
		if typ != websocket.MessageBinary {
			continue
		}
		f, err := UnmarshalFrame(data)
		if err != nil {
			a.log.Warn("feishu: undecodable frame skipped", "err", err)
			continue
		}
		switch {
		case f.Method == FrameControl && f.Get(HdrType) == TypePong:
			worked = true
		case f.Method == FrameData && f.Get(HdrType) == TypeEvent:
			worked = true
			payload, complete := frags.add(f, time.Now(), a.ws.fragmentTTL)
			if !complete {
				continue
			}
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				a.handleEvent(ctx, conn, f, payload, sink)
			}()
		}
	}
}

// pingLoop sends a ping now and every interval until ctx ends.
func (a *App) pingLoop(ctx context.Context, conn *websocket.Conn, serviceID int32, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ping := Frame{Service: serviceID, Method: FrameControl, Headers: []Header{{HdrType, TypePing}}}
		if err := conn.Write(ctx, websocket.MessageBinary, ping.Marshal()); err != nil {
			return // the reader notices the dead socket
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// handleEvent stores one event and only then acks it: {"code":200} after
// sink.Accept returned, {"code":500} when it failed, so that Feishu
// delivers it again (to this or another client).
func (a *App) handleEvent(ctx context.Context, conn *websocket.Conn, f Frame, payload []byte, sink channels.Sink) {
	start := time.Now()
	code := http.StatusOK
	in, ok, err := a.decodeEvent(ctx, payload)
	switch {
	case errors.Is(err, channels.ErrUnavailable):
		code = http.StatusInternalServerError
		a.log.Warn("feishu: event not decoded now; Feishu delivers it again", "err", err)
	case err != nil:
		// Retrying cannot fix a payload we cannot read: ack it.
		a.log.Error("feishu: event dropped", "err", err)
	case ok:
		receipt, err := sink.Accept(ctx, in)
		if err != nil {
			code = http.StatusInternalServerError
			a.log.Warn("feishu: event not stored; Feishu delivers it again", "msg_id", in.MsgID, "err", err)
			break
		}
		a.afterAccept(sink, in, receipt)
	}
	ack := f
	ack.Headers = append(append([]Header(nil), f.Headers...), Header{HdrBizRT, strconv.FormatInt(time.Since(start).Milliseconds(), 10)})
	ack.Payload, _ = json.Marshal(map[string]int{"code": code})
	if err := conn.Write(ctx, websocket.MessageBinary, ack.Marshal()); err != nil {
		a.log.Warn("feishu: ack not sent; Feishu delivers the event again", "err", err)
		return
	}
	a.log.Debug("feishu: event acked", "msg_id", in.MsgID, "code", code, "ack_ms", time.Since(start).Milliseconds())
}

// fragments reassembles payloads split over frames (headers sum/seq,
// shared message_id). Only the reading goroutine uses it.
type fragments struct {
	m map[string]*partial
}

type partial struct {
	parts [][]byte
	got   int
	first time.Time
}

// add takes one data frame; it returns the whole payload once its last
// missing fragment arrived.
func (fr *fragments) add(f Frame, now time.Time, ttl time.Duration) ([]byte, bool) {
	sum, seq := f.GetInt(HdrSum), f.GetInt(HdrSeq)
	if sum <= 1 {
		return f.Payload, true
	}
	for id, p := range fr.m {
		if now.Sub(p.first) > ttl {
			delete(fr.m, id)
		}
	}
	if seq < 0 || seq >= sum {
		return nil, false
	}
	id := f.Get(HdrMessageID)
	p, ok := fr.m[id]
	if !ok {
		p = &partial{parts: make([][]byte, sum), first: now}
		fr.m[id] = p
	}
	if len(p.parts) != sum || p.parts[seq] != nil {
		return nil, false
	}
	p.parts[seq] = append([]byte{}, f.Payload...)
	p.got++
	if p.got < sum {
		return nil, false
	}
	delete(fr.m, id)
	var whole []byte
	for _, part := range p.parts {
		whole = append(whole, part...)
	}
	return whole, true
}
