package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
)

// checkInterval is how often the leader checks every rule: the shortest
// window (alerts.rules[].window) is a minute.
const checkInterval = time.Minute

// resolveTimeout bounds asking a channel for a rule's chat address while
// the gateway is built.
const resolveTimeout = 10 * time.Second

// Service is threshold alerts. Wire it as one of the gateway's features
// (Deps.Features); Check works once the gateway has attached it.
type Service struct {
	gw       gateway.Services
	attached bool
	// to are the rules' chats, by rule index, resolved at Attach.
	to []gateway.Address
}

var _ gateway.JobFeature = (*Service)(nil)

// errAttached: one Service was wired into a second gateway.
var errAttached = errors.New("alerts: the service is attached to a gateway already")

// New is an alerts service for one gateway.
func New() *Service { return &Service{} }

// Attach implements gateway.Feature: it resolves every rule's chat on its
// channel, so a rule that could never be posted stops the build. Errors
// name the rule's key (alerts.rules[0].to).
func (s *Service) Attach(gw gateway.Services) error {
	if s.attached {
		return errAttached
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	to := make([]gateway.Address, len(gw.Config.Alerts.Rules))
	for i, r := range gw.Config.Alerts.Rules {
		addr, err := pushAddress(ctx, gw, r.To.Channel, r.To.Account, r.To.ChatType, r.To.ChatID)
		if err != nil {
			return fmt.Errorf("alerts.rules[%d].to: %w", i, err)
		}
		to[i] = gateway.Address{Channel: r.To.Channel, Account: r.To.Account, ChatID: r.To.ChatID, ReplyTo: addr}
	}
	s.gw, s.to, s.attached = gw, to, true
	return nil
}

// pushAddress is the address of an unprompted message to chatID.
func pushAddress(ctx context.Context, gw gateway.Services, channel, account, chatType, chatID string) (json.RawMessage, error) {
	ch, ok := gw.Channel(channel)
	if !ok {
		return nil, fmt.Errorf("no channel %q is configured", channel)
	}
	p, ok := ch.(channels.Pusher)
	if !ok {
		return nil, fmt.Errorf("channel %q cannot send unprompted messages: %w", channel, channels.ErrCannotPush)
	}
	return p.PushAddress(ctx, account, chatType, chatID)
}

// AddWorkers implements gateway.JobFeature: the check job.
func (s *Service) AddWorkers(w *river.Workers) { river.AddWorker(w, &checkWorker{s: s}) }

// PeriodicJobs implements gateway.JobFeature: the leader checks every
// rule each minute (none without rules).
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	if len(s.to) == 0 {
		return nil
	}
	return []*river.PeriodicJob{gateway.LeaderJob(checkInterval, CheckArgs{})}
}

// CheckArgs is the periodic check of every rule.
type CheckArgs struct{}

// Kind implements river.JobArgs (stored with every job: never rename it).
func (CheckArgs) Kind() string { return "hermes.check_alerts" }

type checkWorker struct {
	river.WorkerDefaults[CheckArgs]
	s *Service
}

// Work checks every rule; a failed check is retried by River, and a
// firing already claimed is not posted twice.
func (w *checkWorker) Work(ctx context.Context, _ *river.Job[CheckArgs]) error {
	_, err := w.s.Check(ctx)
	return err
}
