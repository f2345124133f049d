package dingtalk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/hermes-gw/hermes/channels"
)

// maxCallbackBytes bounds a callback body; a robot message is a few KiB.
const maxCallbackBytes = 1 << 20

// route is the robot's callback URL.
func (r *robot) route(sink channels.Sink) channels.Route {
	return channels.Route{
		Method:  http.MethodPost,
		Path:    "/dingtalk/" + r.cfg.Name + "/callback",
		Handler: func(w http.ResponseWriter, req *http.Request) { r.serveCallback(w, req, sink) },
	}
}

// serveCallback verifies the headers before reading anything else,
// decodes and stores the message, and answers 200 only after Accept
// returned. It never calls the model or a skill.
func (r *robot) serveCallback(w http.ResponseWriter, req *http.Request, sink channels.Sink) {
	once, err := r.verifyHeaders(req.Header)
	if err != nil {
		r.refuse(w, req, sink, err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxCallbackBytes+1))
	if err == nil && len(body) > maxCallbackBytes {
		err = fmt.Errorf("body over %d bytes", maxCallbackBytes)
	}
	if err != nil {
		r.refuse(w, req, sink, fmt.Errorf("dingtalk: read callback: %w: %w", channels.ErrBadRequest, err))
		return
	}
	if err := r.receive(req.Context(), body, once, sink); err != nil {
		r.refuse(w, req, sink, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// receive decodes a verified message and hands it to sink with its
// single-use proof (none in Stream mode). It returns after Accept
// committed (or failed), so the caller acknowledges only what is stored.
// (The gateway opens the message's AI card: card.go.)
//
// Errors wrap ErrMalformed, ErrCorp, channels.ErrReplayed or
// channels.ErrUnavailable.
func (r *robot) receive(ctx context.Context, data []byte, once proof, sink channels.Sink) error {
	in, ok, err := r.decodeMessage(data)
	in.Nonce, in.NonceExpires = once.nonce, once.expires
	switch {
	case errors.Is(err, ErrCorp):
		// Refused whatever the claim finds, unless it could not be stored:
		// the platform retries then, and the claim with it.
		if cerr := r.claimOnly(ctx, sink, in); errors.Is(cerr, channels.ErrUnavailable) {
			return cerr
		}
		return err
	case err != nil:
		return err
	case !ok:
		r.log.Info("message without senderStaffId (external contact?) not answered")
		return r.claimOnly(ctx, sink, in)
	}
	_, err = sink.Accept(ctx, in)
	return err
}

// claimOnly hands sink a signed message Hermes will not answer (in names
// it, without a sender, so nothing is stored) to claim its single-use
// proof: otherwise its captured signature could carry a body Hermes does
// answer. Without a proof (Stream mode) there is nothing to claim.
//
// Errors wrap channels.ErrReplayed or channels.ErrUnavailable.
func (r *robot) claimOnly(ctx context.Context, sink channels.Sink, in channels.Inbound) error {
	if in.Nonce == "" {
		return nil
	}
	_, err := sink.Accept(ctx, in)
	return err
}

// refuse answers a refused callback and, when the request failed one of
// the checks (not a failed Accept), records which one for the console.
func (r *robot) refuse(w http.ResponseWriter, req *http.Request, sink channels.Sink, err error) {
	channels.RefuseRecorded(w, req, r.log, "dingtalk callback", err, sink, ChannelName, r.cfg.Name)
}
