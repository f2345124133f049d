package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/console"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/reports"
)

// consoleAccount is Inbound.Account for terminal sessions.
const consoleAccount = "terminal"

func runChat(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("chat", std.err)
	stdout := std.out
	user := fs.String("user", "zhangsan", "the user id you chat as; the console trusts whoever runs it")
	cfg, pool, err := loadAndOpen(ctx, fs, path, args)
	if err != nil {
		return err
	}
	defer pool.Close()
	sess, err := startConsole(ctx, consoleSetup{
		cfg: cfg, pool: pool, out: stdout,
		user: channels.Identity{UserID: *user, CorpID: "console"},
	})
	if err != nil {
		return err
	}
	defer sess.stop(ctx)
	fmt.Fprintf(stdout, "Hermes chat as %q. Type a message; an empty line or Ctrl-D ends.\n", *user)
	return sess.repl(ctx, std.in, stdout)
}

// consoleSetup is what a terminal session needs.
type consoleSetup struct {
	cfg    *config.Config
	pool   *pgxpool.Pool
	model  agent.Model // nil: from cfg
	skills fs.FS       // skill definitions; nil: cfg.Skills.Dir
	user   channels.Identity
	out    io.Writer
}

// consoleSession runs the full pipeline — inbox, job queue, agent, outbox —
// for a person at a terminal, on a job queue of this process only.
type consoleSession struct {
	gw      *gateway.Gateway
	reports *reports.Service
	// knowledge is the knowledge base's feature (the demo loads its
	// handbook into it).
	knowledge *knowledge.Service
	ch        *console.Channel
	user      channels.Identity
	timeout   time.Duration
}

func startConsole(ctx context.Context, s consoleSetup) (*consoleSession, error) {
	ch := console.New(s.out, "Hermes> ")
	// A queue of this process alone, so a `hermes serve` sharing the
	// database never takes a terminal's jobs.
	queue := fmt.Sprintf("console_%d", os.Getpid())
	features := newFeatures()
	gw, err := gateway.New(ctx, s.cfg, gateway.Deps{
		Pool:      s.pool,
		Model:     s.model,
		SkillsFS:  s.skills,
		Platforms: platforms,
		Features:  features,
		Channels:  []channels.Channel{ch},
		Queues:    map[string]int{queue: 2},
		Partial:   true,
		QueueFor:  func(string) (string, string) { return queue, queue },
	})
	if err != nil {
		return nil, err
	}
	if err := gw.Start(ctx); err != nil {
		return nil, err
	}
	reps, _ := gateway.FeatureOf[*reports.Service](features)
	kb, _ := gateway.FeatureOf[*knowledge.Service](features)
	return &consoleSession{gw: gw, reports: reps, knowledge: kb, ch: ch, user: s.user, timeout: s.cfg.Agent.RunTimeout + time.Minute}, nil
}

// ask sends one line through the pipeline and waits until its reply has been
// delivered (printed) by the console channel.
func (s *consoleSession) ask(ctx context.Context, text string) (string, error) {
	return s.send(ctx, s.ch.Message(s.user, consoleAccount, text))
}

// askWith sends text with files and waits for the answer.
func (s *consoleSession) askWith(ctx context.Context, text string, files ...console.File) (string, error) {
	return s.send(ctx, s.ch.MessageWith(s.user, consoleAccount, text, files...))
}

// send hands in to the gateway and waits for the answer.
func (s *consoleSession) send(ctx context.Context, in channels.Inbound) (string, error) {
	if _, err := s.gw.Accept(ctx, in); err != nil {
		return "", err
	}
	return s.next(ctx)
}

// next waits for the next reply delivered to this terminal: the answer to
// a line, or a result that arrives later (async skills).
func (s *consoleSession) next(ctx context.Context) (string, error) {
	wait, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	select {
	case out := <-s.ch.Delivered():
		return out.Text, nil
	case <-wait.Done():
		return "", fmt.Errorf("no reply within %s", s.timeout)
	}
}

func (s *consoleSession) repl(ctx context.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	for {
		fmt.Fprint(out, "你> ")
		if !sc.Scan() {
			fmt.Fprintln(out)
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			return nil
		}
		if _, err := s.ask(ctx, line); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			fmt.Fprintln(out, "error:", err)
		}
	}
}

func (s *consoleSession) stop(ctx context.Context) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = s.gw.Stop(stopCtx)
}
