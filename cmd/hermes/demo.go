package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// demoScript is the conversation `hermes demo` plays: a skill that reads
// the caller's own data, a search, and a skill that writes.
var demoScript = []string{
	"我还有几天年假？",
	"公司的报销制度是怎样的？",
	"帮我提个工单：显示器闪屏，标题写“显示器故障”",
}

// demoHMACKeyEnv is the variable the sample skills read their identity
// signing key from (see skills/samples/*/SKILL.md).
const demoHMACKeyEnv = "HERMES_DEMO_HMAC_KEY"

func runDemo(ctx context.Context, args []string, std stdio) error {
	stdout := std.out
	fs := flag.NewFlagSet("hermes demo", flag.ContinueOnError)
	fs.SetOutput(std.err)
	interactive := fs.Bool("i", false, "after the scripted conversation, keep chatting in the terminal")
	verbose := fs.Bool("v", false, "show the gateway's logs")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if !*verbose {
		slog.SetDefault(slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stdout, "· "+format+"\n", a...) }

	dbURL, cleanup, err := demoDB(ctx, logf)
	if err != nil {
		return err
	}
	defer cleanup()

	// The demo HR/IT backend, verifying the identity Hermes signs.
	// A fresh signing key per run, handed to the skills through the
	// environment as a real deployment would.
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := hex.EncodeToString(raw)
	os.Setenv(demoHMACKeyEnv, key)
	backend := demobackend.New([]byte(key), time.Now)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: backend, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	backendURL := "http://" + ln.Addr().String()
	logf("demo HR/IT backend: %s (verifies the signed caller identity on every request)", backendURL)

	cfg := demoConfig(dbURL)
	cfg.Skills.BaseURL = backendURL
	var model agent.Model
	if cfg.Model.Provider == "offline" {
		logf("model: none configured (set HERMES_MODEL_BASE_URL and HERMES_MODEL_NAME) — using the offline demo model")
		model = agent.OfflineModel{}
	} else {
		logf("model: %s at %s", cfg.Model.Name, cfg.Model.BaseURL)
	}

	pool, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	user := channels.Identity{UserID: "zhangsan", Name: "张三", CorpID: "demo-corp"}
	sess, err := startConsole(ctx, consoleSetup{cfg: cfg, pool: pool, model: model, skills: skills.SamplesFS(), user: user, out: stdout})
	if err != nil {
		return err
	}
	defer sess.stop(ctx)

	fmt.Fprintf(stdout, "\n== Hermes demo: you are %s (%s), writing through the console channel ==\n\n", user.Name, user.UserID)
	seen := 0
	for _, line := range demoScript {
		fmt.Fprintf(stdout, "你> %s\n", line)
		if _, err := sess.ask(ctx, line); err != nil {
			return err
		}
		calls := backend.Calls()
		for _, c := range calls[seen:] {
			fmt.Fprintf(stdout, "   [backend] POST %s → HTTP %d; caller from the signed headers: user=%s channel=%s corp=%s request=%s\n",
				c.Path, c.Status, c.Identity.UserID, c.Identity.Channel, c.Identity.CorpID, shortID(c.RequestID))
		}
		seen = len(calls)
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout, "The backend never read a user id from the model's arguments: Hermes signed the sender's identity into the request headers.")
	if *interactive {
		return sess.repl(ctx, std.in, stdout)
	}
	return nil
}

// demoConfig is the embedded default configuration of the demo.
func demoConfig(dbURL string) *gateway.Config {
	cfg := &gateway.Config{}
	cfg.Database.URL = dbURL
	cfg.Model.Provider = "offline"
	if base, name := os.Getenv("HERMES_MODEL_BASE_URL"), os.Getenv("HERMES_MODEL_NAME"); base != "" && name != "" {
		cfg.Model = gateway.ModelConfig{Provider: "openai", BaseURL: base, Name: name, APIKey: os.Getenv("HERMES_MODEL_API_KEY")}
	}
	cfg.ApplyDefaults()
	return cfg
}

func shortID(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return strings.TrimSpace(s)
}
