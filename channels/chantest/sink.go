package chantest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Sink is an in-memory channels.Sink for a platform package's own tests:
// the gateway's side of the boundary as a platform sees it. Like the
// gateway it stores a message once per account and message id, answers
// messages (not events) in single chats and group messages that mention
// the bot, and claims a proof without a sender without storing anything.
// A test can make Accept fail or wait, script the progress of an answer,
// and read what was accepted, shown and refused.
type Sink struct {
	mu       sync.Mutex
	accepted []channels.Inbound // new messages, answered or not
	answered []channels.Inbound // the new ones to be answered
	calls    int                // Accept calls that returned, failed or not
	seen     map[string]bool    // account/msgid stored
	fail     error
	gate     chan struct{} // when set, Accept waits for it to close
	started  chan channels.Inbound
	progress map[string]channels.Progress // by msgid
	script   func(n int) channels.Progress
	polls    int
	received time.Time
	shown    []channels.MessageRef
	refused  []string // "account/check" of Refused calls
	changes  Changes
}

var _ channels.Sink = (*Sink)(nil)

// startedBuffer is how many Accept calls Started holds for a test that
// has not read them (more are dropped, never blocking Accept).
const startedBuffer = 256

// NewSink returns an empty sink.
func NewSink() *Sink {
	return &Sink{seen: map[string]bool{}, started: make(chan channels.Inbound, startedBuffer),
		progress: map[string]channels.Progress{}}
}

// WithReceived makes every Progress of a known message say it was
// received at t (stream deadlines count from it), and returns s.
func (s *Sink) WithReceived(t time.Time) *Sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = t
	return s
}

// Accept implements channels.Sink.
func (s *Sink) Accept(ctx context.Context, in channels.Inbound) (channels.Receipt, error) {
	select {
	case s.started <- in:
	default:
	}
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return channels.Receipt{}, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	s.calls++
	if s.fail != nil {
		return channels.Receipt{}, s.fail
	}
	if in.Nonce != "" && in.Sender.UserID == "" {
		return channels.Receipt{}, nil // a proof to claim, nothing to store
	}
	answer := in.MsgType != channels.TypeEvent && (in.ChatType != channels.ChatGroup || in.Mentioned)
	key := in.Account + "/" + in.MsgID
	if s.seen[key] {
		return channels.Receipt{Answer: answer}, nil
	}
	s.seen[key] = true
	s.accepted = append(s.accepted, in)
	if answer {
		s.answered = append(s.answered, in)
		if _, ok := s.progress[in.MsgID]; !ok {
			s.progress[in.MsgID] = channels.Progress{Known: true}
		}
	}
	return channels.Receipt{New: true, Answer: answer}, nil
}

// Progress implements channels.Sink: the script's answer when there is
// one, else what SetProgress said of ref (Known for an accepted message
// to be answered), Shown once Shown was recorded.
func (s *Sink) Progress(_ context.Context, ref channels.MessageRef) (channels.Progress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls++
	p := s.progress[ref.MsgID]
	if s.script != nil {
		p = s.script(s.polls)
	}
	if p.Known && p.Received.IsZero() {
		p.Received = s.received
	}
	p.Shown = p.Shown || slices.ContainsFunc(s.shown, func(r channels.MessageRef) bool { return r.MsgID == ref.MsgID })
	return p, nil
}

// Shown implements channels.Sink.
func (s *Sink) Shown(_ context.Context, ref channels.MessageRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shown = append(s.shown, ref)
	s.notifyLocked()
	return nil
}

// Refused implements channels.Sink, recording account/check.
func (s *Sink) Refused(_ context.Context, _, account, check string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, account+"/"+check)
	s.notifyLocked()
}

// FailWith makes Accept return err (nil: store again).
func (s *Sink) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Hold makes Accept wait until the returned channel is closed (or its
// ctx ends).
func (s *Sink) Hold() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
	return s.gate
}

// Started receives every Inbound handed to Accept, as Accept starts
// (before a Hold).
func (s *Sink) Started() <-chan channels.Inbound { return s.started }

// SetProgress sets what Progress says of msgID.
func (s *Sink) SetProgress(msgID string, p channels.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress[msgID] = p
}

// Script makes Progress answer script(n) for its n-th call (from 1), of
// whatever message.
func (s *Sink) Script(script func(n int) channels.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = script
}

// Accepted are the new messages stored, in order, answered or not.
func (s *Sink) Accepted() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accepted)
}

// Answered are the new messages stored to be answered, in order.
func (s *Sink) Answered() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answered)
}

// Calls counts the Accept calls that returned, failed or not.
func (s *Sink) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// ShownRefs are the messages Shown was recorded for, in order.
func (s *Sink) ShownRefs() []channels.MessageRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.shown)
}

// Refusals are the "account/check" of every Refused call, in order.
func (s *Sink) Refusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

// Wait waits until cond holds, checked after every change to the sink,
// or fails naming what when ctx ends.
func (s *Sink) Wait(ctx context.Context, what string, cond func() bool) error {
	if err := s.changes.Wait(ctx, cond); err != nil {
		return fmt.Errorf("chantest: waiting for %s: %w", what, err)
	}
	return nil
}

// WaitShown waits until Shown was recorded for msgID.
func (s *Sink) WaitShown(ctx context.Context, msgID string) error {
	return s.Wait(ctx, "Shown("+msgID+")", func() bool {
		return slices.ContainsFunc(s.ShownRefs(), func(r channels.MessageRef) bool { return r.MsgID == msgID })
	})
}

func (s *Sink) notifyLocked() { s.changes.Broadcast() }
