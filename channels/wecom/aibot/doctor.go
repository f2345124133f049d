package aibot

import (
	"context"
	"net"
	"net/url"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// checkTimeout bounds the doctor's dial of the long-connection server.
const checkTimeout = 10 * time.Second

// Check is the bot's setup check, for `hermes doctor`: a callback bot's
// crypto keys were decoded when the config loaded; a websocket bot's
// server must accept a TCP connection (no subscription is made: it would
// take the bot's one connection from a running replica).
func (b *Bot) Check(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "wecom/bot " + b.name + ": " + b.mode}
	if b.mode == ModeCallback {
		ck.OK, ck.Detail = true, "callback mode: Token and EncodingAESKey decode; WeCom verifies the URL when you save it"
		return ck
	}
	u, err := url.Parse(b.url)
	if err != nil {
		ck.Detail, ck.Fix = "websocket URL unreadable", "wecom.bots[].url: a ws(s):// URL"
		return ck
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"ws": "80", "wss": "443", "http": "80", "https": "443"}[u.Scheme]
	}
	d := net.Dialer{Timeout: checkTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		ck.Detail = "long-connection server unreachable at " + u.Host
		ck.Fix = "let this server reach " + u.Host + " over TCP (firewall, proxy, DNS)"
		return ck
	}
	conn.Close()
	ck.OK, ck.Detail = true, "long-connection server reachable at "+u.Host+" (subscription not tried: a replica may hold it)"
	return ck
}
