package memory

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
)

// purgeInterval is how often the leader deletes memories past
// memory.retention.
const purgeInterval = time.Hour

// Service is long-term memory for one gateway: the chat commands, the
// notes a run's prompt carries, and learning after each answer. Make one
// per gateway with New.
type Service struct {
	s gateway.Services
	// embedder is memory.embeddings' endpoint; nil when it is off, and
	// recall is lexical only.
	embedder Embedder
}

var (
	_ gateway.MemoryFeature = (*Service)(nil)
	_ gateway.JobFeature    = (*Service)(nil)
)

// New is a memory service to attach to a gateway.
func New() *Service { return &Service{} }

// Attach implements gateway.Feature. A broken memory.embeddings stops
// the gateway here, naming the key.
func (m *Service) Attach(s gateway.Services) error {
	m.s = s
	ep, err := s.Config.Memory.EmbeddingsEndpoint(s.Config.Model)
	if err != nil {
		return err
	}
	m.embedder = NewEmbedder(ep)
	return nil
}

func (m *Service) cfg() config.MemoryConfig { return m.s.Config.Memory }

func (m *Service) words() config.MemoryMessages { return m.s.Config.Messages.Memory }

func (m *Service) log() *slog.Logger { return m.s.Log }

// ownerOf is whose memories a message's are: its verified sender, in its
// corp. Nothing the model or the message's text says can name another.
func ownerOf(in channels.Inbound) Owner {
	return Owner{CorpID: in.Sender.CorpID, UserID: in.Sender.UserID}
}

// Notes implements gateway.MemoryFeature: the sender's memories most
// relevant to text, within memory.prompt_tokens, headed as the user's
// notes (and, in a group, as not to be recited). The agent carries them
// as the user's data, fenced, never as instructions. A failure costs the
// notes, never the answer.
func (m *Service) Notes(ctx context.Context, in channels.Inbound, text string) agent.Notes {
	cfg := m.cfg()
	if !cfg.On(in.Account, in.ChatID) || in.Sender.UserID == "" {
		return agent.Notes{}
	}
	o := ownerOf(in)
	var prefs, found []Memory
	var err error
	if m.embedder == nil {
		// Lexical recall only: both reads in one round trip.
		prefs, found, err = PreferencesAndRecall(ctx, m.s.Pool, o, text, cfg.Recall, m.s.Now())
		if err != nil {
			m.log().Warn("memories not read; answering without them", "err", err)
		}
	} else {
		if prefs, err = Preferences(ctx, m.s.Pool, o, m.s.Now()); err != nil {
			m.log().Warn("preferences not read; answering without them", "err", err)
		}
		if found, err = m.recall(ctx, o, text, cfg.Recall); err != nil {
			m.log().Warn("memories not recalled; answering without them", "err", err)
		}
	}
	w := m.words()
	notes := agent.Notes{Heading: w.Notes}
	if in.ChatType == channels.ChatGroup {
		notes.Heading += "\n" + w.Group
	}
	// Preferences first, every time: how to answer applies to whatever is
	// asked. Then the memories the message bears on.
	budget, seen := cfg.PromptTokens, map[int64]bool{}
	for _, mem := range slices.Concat(prefs, found) {
		if seen[mem.ID] {
			continue
		}
		seen[mem.ID] = true
		item := fmt.Sprintf("%s（%s）", mem.Text, mem.CreatedAt.Format("2006-01-02"))
		// A token is about a Chinese character and more than one of a
		// Latin word's letters: counting runes (and the quotes and comma
		// around each) never underestimates.
		if budget -= len([]rune(item)) + 3; budget < 0 {
			break
		}
		notes.Items = append(notes.Items, item)
	}
	return notes
}

// recall is RecallWith the query's embedding when memory.embeddings is on
// and the owner has memories with one; lexical when the endpoint fails.
func (m *Service) recall(ctx context.Context, o Owner, text string, limit int) ([]Memory, error) {
	now := m.s.Now()
	sim := Similar{Min: m.cfg().Embeddings.MinSimilarity}
	if m.embedder != nil && strings.TrimSpace(text) != "" {
		has, err := hasEmbeddings(ctx, m.s.Pool, o, now)
		if err != nil {
			return nil, err
		}
		if has {
			// What the user wrote goes to another endpoint: masked as the
			// extraction's input is (memories are stored unmasked only
			// because they hold nothing the masking would change).
			vec, err := m.embedder.Embed(ctx, agent.MaskedText(text))
			if err != nil {
				m.log().Warn("message not embedded; recalling memories by their terms", "err", err)
			} else {
				sim.Embedding = vec
			}
		}
	}
	return RecallWith(ctx, m.s.Pool, o, text, limit, now, sim)
}

// LearnTx implements gateway.MemoryFeature: after a run whose message may
// teach something (a statement about the user, a confirmed write), a job
// reads it and stores what it finds. Other answers queue nothing.
func (m *Service) LearnTx(ctx context.Context, tx pgx.Tx, in channels.Inbound, inboundID int64, runID string) error {
	cfg := m.cfg()
	if runID == "" || !cfg.On(in.Account, in.ChatID) || in.Sender.UserID == "" {
		return nil
	}
	confirmation := isOneOf(in.Text, m.s.Config.Messages.ConfirmWords)
	if !confirmation && !(*cfg.Extract && statesSomething(in.Text)) {
		return nil
	}
	return m.s.Jobs.InsertTx(ctx, tx, in.Channel, LearnArgs{InboundID: inboundID, RunID: runID},
		river.InsertOpts{MaxAttempts: learnAttempts})
}

// AddWorkers implements gateway.JobFeature.
func (m *Service) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &learnWorker{m: m})
	river.AddWorker(w, &purgeWorker{m: m})
}

// PeriodicJobs implements gateway.JobFeature: the leader deletes memories
// past memory.retention.
func (m *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{gateway.LeaderJob(purgeInterval, PurgeArgs{})}
}

// PurgeArgs is the periodic deletion of memories past memory.retention.
type PurgeArgs struct{}

// Kind implements river.JobArgs.
func (PurgeArgs) Kind() string { return "hermes.purge_memories" }

type purgeWorker struct {
	river.WorkerDefaults[PurgeArgs]
	m *Service
}

func (w *purgeWorker) Work(ctx context.Context, _ *river.Job[PurgeArgs]) error {
	n, err := Purge(ctx, w.m.s.Pool, w.m.s.Now())
	if n > 0 {
		w.m.log().Info("memories past retention deleted", "count", n)
	}
	return err
}

// bare is text without surrounding spaces and punctuation, lower-cased:
// 「/memory」, "我的记忆。" and " /MEMORY " are one command.
func bare(text string) string {
	return strings.ToLower(strings.TrimFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }))
}

func isOneOf(text string, words []string) bool {
	t := bare(text)
	for _, w := range words {
		if bare(w) == t {
			return true
		}
	}
	return false
}
