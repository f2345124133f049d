package memory_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// syncBuffer is a log the service writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// embeddingService is a memory service whose memory.embeddings is f's
// model, its base_url and api_key left to default to the model section's.
type embeddingService struct {
	*memory.Service
	pool *pgxpool.Pool
	f    *fakeEmbeddings
	log  *syncBuffer
}

func newEmbeddingService(t *testing.T) *embeddingService {
	t.Helper()
	f := newFakeEmbeddings(t)
	cfg, err := config.ParseConfig(fmt.Appendf(nil, `database:
  url: postgres://hermes@127.0.0.1/hermes
model:
  base_url: %s/v1
  api_key: %s
  name: deepseek-chat
memory:
  embeddings:
    name: %s
`, f.URL, f.key, f.model), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s := &embeddingService{Service: memory.New(), pool: storetest.NewPool(t), f: f, log: &syncBuffer{}}
	if err := s.Attach(gateway.Services{Config: cfg, Pool: s.pool, Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(s.log, nil))}); err != nil {
		t.Fatal(err)
	}
	return s
}

// inbound is a direct message of wang.
func inbound(text string) channels.Inbound { return inboundOf(wang, text) }

// inboundOf is a direct message of o.
func inboundOf(o memory.Owner, text string) channels.Inbound {
	return channels.Inbound{Channel: "wecom", Account: "app-it", ChatID: o.UserID, ChatType: channels.ChatSingle,
		Sender: channels.Identity{UserID: o.UserID, CorpID: o.CorpID}, Text: text}
}

// remember is wang's 「记住 text」.
func (s *embeddingService) remember(t *testing.T, text string) { s.rememberOf(t, wang, text) }

func (s *embeddingService) rememberOf(t *testing.T, o memory.Owner, text string) {
	t.Helper()
	reply, ok, err := s.Command(context.Background(), inboundOf(o, "记住 "+text), 1)
	if err != nil || !ok || !strings.Contains(reply, text) {
		t.Fatalf("记住 %s: %q, %v, %v", text, reply, ok, err)
	}
}

// dims is the length of the stored embedding of text (0: NULL).
func (s *embeddingService) dims(t *testing.T, text string) int {
	t.Helper()
	var n int
	err := s.pool.QueryRow(context.Background(), `SELECT coalesce(cardinality(embedding), 0) FROM memories WHERE text = $1`, text).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestServiceEmbedsWhatItStoresAndRecallsByMeaning(t *testing.T) {
	t.Parallel()
	s := newEmbeddingService(t)
	s.remember(t, vpnClient)
	s.remember(t, noTopic)
	if n := s.dims(t, vpnClient); n != len(topics)+1 {
		t.Fatalf("stored embedding of %d dimensions, want %d", n, len(topics)+1)
	}
	calls := s.f.calls.Load()
	notes := notesText(s.Notes(context.Background(), inbound(remoteHowQ), remoteHowQ))
	if !strings.Contains(notes, "- "+vpnClient+"（2026-12-01）") || strings.Contains(notes, noTopic) {
		t.Errorf("notes for %q = %q, want %q only", remoteHowQ, notes, vpnClient)
	}
	if got := s.f.calls.Load() - calls; got != 1 {
		t.Errorf("%d embeddings calls for one message, want 1", got)
	}
}

// The endpoint fails at recall: the notes are the lexical ones, logged.
func TestServiceFallsBackToTermsWhenTheEndpointFails(t *testing.T) {
	t.Parallel()
	s := newEmbeddingService(t)
	s.remember(t, vpnClient)
	s.f.fail.Store(true)
	if notes := notesText(s.Notes(context.Background(), inbound(remoteHowQ), remoteHowQ)); notes != "" {
		t.Errorf("notes without the endpoint for a query sharing no term: %q", notes)
	}
	if notes := notesText(s.Notes(context.Background(), inbound("VPN 连不上"), "VPN 连不上")); !strings.Contains(notes, vpnClient) {
		t.Errorf("notes without the endpoint for a query sharing vpn: %q, want %q", notes, vpnClient)
	}
	if log := s.log.String(); !strings.Contains(log, "recalling memories by their terms") || !strings.Contains(log, "500") {
		t.Errorf("log %q, want the fallback and the endpoint's status", log)
	}
}

// The endpoint fails at store: the memory is kept without an embedding
// (logged), recalled by its terms, and a message then costs no call.
func TestServiceStoresWithoutEmbeddingWhenTheEndpointFails(t *testing.T) {
	t.Parallel()
	s := newEmbeddingService(t)
	s.f.fail.Store(true)
	s.remember(t, vpnClient)
	if n := s.dims(t, vpnClient); n != 0 {
		t.Fatalf("embedding of %d dimensions stored from a failed call", n)
	}
	if !strings.Contains(s.log.String(), "memory stored without its embedding") {
		t.Errorf("log %q, want the missing embedding", s.log.String())
	}
	s.f.fail.Store(false)
	calls := s.f.calls.Load()
	if notes := notesText(s.Notes(context.Background(), inbound("VPN 连不上"), "VPN 连不上")); !strings.Contains(notes, vpnClient) {
		t.Errorf("notes %q, want %q by its terms", notes, vpnClient)
	}
	if notes := notesText(s.Notes(context.Background(), inbound(remoteHowQ), remoteHowQ)); notes != "" {
		t.Errorf("notes %q for a query sharing no term", notes)
	}
	if got := s.f.calls.Load() - calls; got != 0 {
		t.Errorf("%d embeddings calls for an owner without embedded memories, want 0", got)
	}
}

// Each owner's message is compared with their own embedded memories only.
func TestServiceEmbeddingsIsolateOwners(t *testing.T) {
	t.Parallel()
	s := newEmbeddingService(t)
	s.remember(t, vpnClient)
	liNote := "内网账号找 IT 部开通"
	s.rememberOf(t, li, liNote)
	if notes := notesText(s.Notes(context.Background(), inboundOf(li, remoteHowQ), remoteHowQ)); !strings.Contains(notes, liNote) || strings.Contains(notes, vpnClient) {
		t.Errorf("lisi's notes = %q, want hers only", notes)
	}
	if notes := notesText(s.Notes(context.Background(), inboundOf(wang2, remoteHowQ), remoteHowQ)); notes != "" {
		t.Errorf("the same user id in another corp has wang's notes: %q", notes)
	}
	if notes := notesText(s.Notes(context.Background(), inbound(remoteHowQ), remoteHowQ)); !strings.Contains(notes, vpnClient) || strings.Contains(notes, liNote) {
		t.Errorf("wang's notes = %q, want his only", notes)
	}
}

// A memory.embeddings that cannot work stops the service's attachment,
// naming the key.
func TestAttachRefusesBrokenEmbeddings(t *testing.T) {
	t.Parallel()
	cfg, err := config.ParseConfig([]byte("database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// A config changed after it was read (ParseConfig refuses this one).
	cfg.Memory.Embeddings.Name = "bge-m3"
	err = memory.New().Attach(gateway.Services{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "memory.embeddings.base_url: required") {
		t.Fatalf("attach: %v, want memory.embeddings.base_url named", err)
	}
}

// notesText is the notes as the lines they were before they became data:
// "- note" each, "" for none.
func notesText(n agent.Notes) string {
	var lines []string
	for _, it := range n.Items {
		lines = append(lines, "- "+it)
	}
	return strings.Join(lines, "\n")
}

// A preference about how to answer goes with every message, even one it
// shares no word or meaning with (「叫我小王」 and 「远程接入怎么弄」), and
// before the memories the message bears on; a fact does not.
func TestPreferencesGoWithEveryMessage(t *testing.T) {
	t.Parallel()
	s := newEmbeddingService(t)
	s.remember(t, callMe)
	s.remember(t, noTopic)
	s.remember(t, vpnClient)
	notes := notesText(s.Notes(context.Background(), inbound(remoteHowQ), remoteHowQ))
	if notes != "- "+callMe+"（2026-12-01）\n- "+vpnClient+"（2026-12-01）" {
		t.Errorf("notes for %q = %q, want the preference first, then the memory it bears on, and not the unrelated fact", remoteHowQ, notes)
	}
}
