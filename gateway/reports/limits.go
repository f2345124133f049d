package reports

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/reports/schedule"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// Limits of reports employees create in chat; each comes as a *Refusal,
// which also wraps ErrBadReport.
var (
	// ErrTooFrequent: two coming fires are closer than
	// reports.min_interval.
	ErrTooFrequent = errors.New("report fires more often than reports.min_interval")
	// ErrTooMany: the owner already has reports.max_per_user reports made
	// in chat.
	ErrTooMany = errors.New("owner has reports.max_per_user reports")
	// ErrWriteSkill: the skill changes data and does not allow reports
	// made in chat (skills' "reports: allow").
	ErrWriteSkill = errors.New("a skill that changes data, in a report made in chat")
)

// Refusal is a report refused by a limit of reports employees create
// (Kind is ErrTooFrequent, ErrTooMany or ErrWriteSkill) or by a chat the
// bot may not push to yet (channels.ErrCannotPush). Sentence says why to
// the user (messages.reports, Chinese by default): the agent relays it,
// and a refusal at 「确认」 is shown as it is (gateway.UserFacing). It
// wraps ErrBadReport and Kind.
type Refusal struct {
	Kind     error
	Sentence string
}

var _ gateway.UserFacing = (*Refusal)(nil)

func (r *Refusal) Error() string   { return r.Kind.Error() + ": " + r.Sentence }
func (r *Refusal) Unwrap() []error { return []error{ErrBadReport, r.Kind} }

// UserSentence implements gateway.UserFacing.
func (r *Refusal) UserSentence() string { return r.Sentence }

// writeSkillRefusal refuses a skill that changes data in a report made in
// chat, unless its definition allows it (reports: allow).
func (s *Service) writeSkillRefusal(spec skills.Spec) error {
	if spec.ReportsAllowed {
		return nil
	}
	return &Refusal{Kind: ErrWriteSkill,
		Sentence: fmt.Sprintf(s.gw.Config.Messages.Reports.WriteSkill, cmp.Or(spec.DisplayName, spec.Name))}
}

// checkFrequency refuses a schedule two of whose coming fires are closer
// than reports.min_interval (the fire times themselves, not the text).
func (s *Service) checkFrequency(sch schedule.Schedule) error {
	least := s.gw.Config.Reports.MinInterval
	a, b, tooClose := sch.TooClose(s.gw.Now(), least)
	if !tooClose {
		return nil
	}
	layout := "2006-01-02 15:04"
	if a.Second() != 0 || b.Second() != 0 {
		layout += ":05"
	}
	words := s.gw.Config.Messages.Reports
	return &Refusal{Kind: ErrTooFrequent, Sentence: fmt.Sprintf(words.TooFrequent,
		words.Schedule.Duration(least), a.Format(layout), b.Format(layout), words.Schedule.Duration(b.Sub(a)))}
}

// checkReportCount refuses a report over reports.max_per_user reports
// the owner made in chat.
func (s *Service) checkReportCount(ctx context.Context, q store.Querier, owner store.ReportOwner) error {
	n, err := store.CountReports(ctx, q, owner, store.CreatedByChat)
	if err != nil {
		return err
	}
	if most := s.gw.Config.Reports.MaxPerUser; n >= most {
		return &Refusal{Kind: ErrTooMany, Sentence: fmt.Sprintf(s.gw.Config.Messages.Reports.TooMany, most)}
	}
	return nil
}

// checkFirstContact refuses a target on an account that may push only
// into chats that wrote to it first, when no message from that chat has
// arrived on that account (the inbox knows; the channel does not).
func (s *Service) checkFirstContact(ctx context.Context, p channels.Pusher, t TargetRef) error {
	fc, ok := p.(channels.FirstContactPusher)
	if !ok || !fc.PushNeedsFirstContact(t.Account) {
		return nil
	}
	wrote, err := store.ChatHasWritten(ctx, s.gw.Pool, t.Channel, t.Account, t.ChatType, t.ChatID)
	if err != nil || wrote {
		return err
	}
	return &Refusal{Kind: channels.ErrCannotPush, Sentence: fmt.Sprintf(s.gw.Config.Messages.Reports.FirstContact, t.ChatID)}
}
