package media

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Why an attachment has no bytes, as stored in inbound_media.error: a
// code, not the platform's text (which may quote a URL).
const (
	codeExpired       = "expired"
	codeTooLarge      = "too_large"
	codeUndecryptable = "undecryptable"
	codeRefused       = "refused"
	codeUnreachable   = "unreachable"
	codeNoFetcher     = "no_fetcher"
)

// fetchTimeout bounds one attachment's download: a platform that trickles
// its bytes costs this message this long, no more.
const fetchTimeout = 60 * time.Second

// Fetch downloads the attachments of row not fetched yet through the
// channel's fetcher (nil: the channel cannot), storing each one's bytes or
// why there are none. It runs in the worker, before the message waits for
// its session: a URL that lives five minutes is fetched while it lives,
// however busy the session. An attachment the platform could not serve
// now (unreachable) returns the error, for the job to try again, unless
// final: then it is recorded as failed. Fetching what was fetched before
// (another attempt) does nothing.
func Fetch(ctx context.Context, q store.Querier, fetcher channels.MediaFetcher, row store.InboundRow, lim config.MediaConfig, now func() time.Time, final bool) error {
	if !needsFetch(row.In.Parts, lim) || TooMany(row.In.Parts, lim.MaxAttachments) {
		return nil
	}
	have, err := store.MediaOf(ctx, q, row.ID)
	if err != nil {
		return err
	}
	for i, p := range row.In.Parts {
		if p.Media == nil || !fetched(p.Media, lim) {
			continue
		}
		if _, ok := have[i]; ok {
			continue
		}
		m := store.MediaRow{InboundID: row.ID, Part: i, Kind: p.Media.Kind, Name: p.Media.Name}
		if fetcher == nil {
			m.Error = codeNoFetcher
		} else {
			fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
			att, err := fetcher.FetchMedia(fctx, row.In.Account, *p.Media, lim.MaxBytes)
			cancel()
			switch code := errorCode(err); {
			case err == nil:
				m.Data, m.Size, m.MIME = att.Data, int64(len(att.Data)), http.DetectContentType(att.Data)
				if att.Name != "" {
					m.Name = att.Name
				}
			case code == codeUnreachable && !final:
				return fmt.Errorf("media: part %d of inbound %d: %w", i, row.ID, err)
			default:
				m.Error = code
			}
		}
		m.FetchedAt = now()
		if err := store.SaveMedia(ctx, q, m); err != nil {
			return err
		}
	}
	return nil
}

// needsFetch reports whether parts hold an attachment to download.
func needsFetch(parts []channels.Part, lim config.MediaConfig) bool {
	for _, p := range parts {
		if p.Media != nil && fetched(p.Media, lim) {
			return true
		}
	}
	return false
}

// fetched reports whether ref's bytes are downloaded: voice only without
// the platform's transcript and with media.transcribe on, video (which no
// model here reads) never.
func fetched(ref *channels.MediaRef, lim config.MediaConfig) bool {
	switch ref.Kind {
	case channels.MediaVoice:
		return ref.Transcript == "" && lim.Transcribe.On()
	case channels.MediaVideo:
		return false
	}
	return true
}

// errorCode classes a FetchMedia error.
func errorCode(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, channels.ErrMediaExpired):
		return codeExpired
	case errors.Is(err, channels.ErrMediaTooLarge):
		return codeTooLarge
	case errors.Is(err, channels.ErrMediaUndecryptable):
		return codeUndecryptable
	case errors.Is(err, channels.ErrMediaRefused), errors.Is(err, channels.ErrPermanent):
		return codeRefused
	}
	return codeUnreachable
}
