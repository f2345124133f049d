package media

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// codeTooFast: the sender was over media.attachments_per_minute;
	// nothing was downloaded.
	codeTooFast = "too_fast"
)

// intakeWindow is what media.attachments_per_minute counts over.
const intakeWindow = time.Minute

// releaseTimeout bounds giving back the units of an attempt that ends
// early, also when its ctx was cancelled (a shutdown): units not given
// back only count against the sender for the rest of the minute.
const releaseTimeout = 5 * time.Second

// DB is what Fetch needs of the database: queries, and a batch for the
// intake claim (a *pgxpool.Pool).
type DB interface {
	store.Querier
	store.Batcher
}

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
// (another attempt) does nothing. An attachment that does not decrypt is
// logged to log as an error naming the account's key, once: it is the
// operator's to mend, not the sender's.
//
// Before any download, the attachments to fetch are claimed against the
// sender's media.attachments_per_minute (store.ClaimUnits, shared by the
// replicas; 0: no limit). A message that does not fit has each of them
// recorded as too_fast, without bytes, and Prepare answers it with
// messages.media.too_fast. An attempt that returns for a retry gives back
// the units of the attachments it did not record, so a retry is not
// counted twice.
func Fetch(ctx context.Context, db DB, fetcher channels.MediaFetcher, row store.InboundRow, lim config.MediaConfig, now func() time.Time, final bool, log *slog.Logger) (err error) {
	if !needsFetch(row.In.Parts, lim) || TooMany(row.In.Parts, lim.MaxAttachments) {
		return nil
	}
	have, err := store.MediaOf(ctx, db, row.ID)
	if err != nil {
		return err
	}
	var todo []int // parts to download, in order
	for i, p := range row.In.Parts {
		if _, ok := have[i]; p.Media != nil && fetched(p.Media, lim) && !ok {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	claim, admitted, err := admit(ctx, db, row, len(todo), lim, now())
	if err != nil {
		return err
	}
	if !admitted {
		for _, i := range todo {
			m := store.MediaRow{InboundID: row.ID, Part: i, Kind: row.In.Parts[i].Media.Kind, Name: row.In.Parts[i].Media.Name,
				Error: codeTooFast, FetchedAt: now()}
			if err := store.SaveMedia(ctx, db, m); err != nil {
				return err
			}
		}
		return nil
	}
	saved := 0
	defer func() {
		if err != nil {
			// Only the attachments recorded count; the others are
			// claimed again by the retry.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			err = errors.Join(err, store.ReleaseSend(rctx, db, claim.After(saved)))
		}
	}()
	for _, i := range todo {
		p := row.In.Parts[i]
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
			if m.Error == codeUndecryptable {
				log.Error("media: attachment cannot be decrypted; check the account's key", "channel", row.In.Channel,
					"account", row.In.Account, "key", keyConfig[row.In.Channel], "inbound_id", row.ID, "part", i, "err", err)
			}
		}
		m.FetchedAt = now()
		if err := store.SaveMedia(ctx, db, m); err != nil {
			return err
		}
		saved++
	}
	return nil
}

// admit claims n attachments of row's sender against
// media.attachments_per_minute; admitted false when they do not fit.
func admit(ctx context.Context, db DB, row store.InboundRow, n int, lim config.MediaConfig, now time.Time) (claim store.PaceClaim, admitted bool, err error) {
	if lim.AttachmentsPerMinute <= 0 {
		return store.PaceClaim{}, true, nil
	}
	key := "intake:" + row.In.Channel + "/" + row.In.Account + "/" + row.In.Sender.UserID
	claim, retryAt, err := store.ClaimUnits(ctx, db, store.PaceLimit{Key: key, Max: lim.AttachmentsPerMinute, Window: intakeWindow}, n, now)
	if err != nil {
		return store.PaceClaim{}, false, fmt.Errorf("media: intake of inbound %d: %w", row.ID, err)
	}
	return claim, retryAt.IsZero(), nil
}

// keyConfig names, per channel, the configuration key that decrypts its
// attachments (ErrMediaUndecryptable), for the operator.
var keyConfig = map[string]string{
	"wecom": "wecom.bots[].encoding_aes_key of the account (callback mode; on a long connection WeCom sends each file's aeskey)",
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
