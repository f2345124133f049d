package ops

import (
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

// Bounds of every listener. What a peer sends is bounded in time (headers,
// then the whole request, then the wait for the next one on a kept-alive
// connection) and in header bytes. Nothing bounds a response as a whole:
// a non-streaming completion writes only after a whole agent run, and a
// stream lasts as long as its run; handlers that write for long set a
// deadline per write instead (gateway/openaiapi/stream.go).
//
// ReadTimeout does not cut a handler that outlives it: once a request's
// body has been read to its end (at once for a request without a body)
// net/http clears the read deadline before its background read, which
// only watches for the client going away (net/http server.go,
// connReader.startBackgroundRead; golang/go#18447, fixed in Go 1.8). So no
// wrapper lifts it here; the tests hold this for streams and long runs.
// A handler must never set a read deadline of its own: the background
// read would hit it and cancel the request's context (golang/go#70834).
// A write deadline a handler sets stays for the end of its response (the
// last chunk net/http writes after the handler returned) and is cleared
// before the connection's next request (conn.serve, after finishRequest).
const (
	// readHeaderTimeout bounds a request's headers.
	readHeaderTimeout = 5 * time.Second
	// maxHeaderBytes bounds a request's headers: callbacks and API
	// clients send a few hundred bytes, the console a session cookie.
	maxHeaderBytes = 64 << 10
)

// NewHTTPServer is the http.Server of one of Hermes' listeners, serving h
// on addr with the timeouts of cfg. Every listener `hermes serve` opens is
// built here, so each gets the same bounds.
func NewHTTPServer(cfg config.ServerConfig, addr string, h http.Handler) *http.Server {
	cfg.ApplyTimeoutDefaults() // a config not from config.ParseConfig still gets bounds
	return &http.Server{
		Addr:    addr,
		Handler: h,
		// Headers are part of the request: never more than read_timeout.
		ReadHeaderTimeout: min(readHeaderTimeout, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}
