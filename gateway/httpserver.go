package gateway

import (
	"net/http"
	"time"
)

// readHeaderTimeout bounds a request's headers on every listener.
const readHeaderTimeout = 5 * time.Second

// NewHTTPServer is the http.Server of one of Hermes' listeners, serving h
// on addr with the timeouts of cfg. Every listener `hermes serve` opens is
// built here, so each gets the same bounds.
func NewHTTPServer(cfg ServerConfig, addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: readHeaderTimeout}
}
