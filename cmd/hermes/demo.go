package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/console"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// demoScript is the conversation `hermes demo` plays: skills that read the
// caller's own data, one that needs the user's 「确认」, and one whose
// backend answers later (async).
var demoScript = []string{
	"我还有几天年假？",
	"我上个月工资多少？",
	"帮我重置 VPN 密码",
	"确认",
	"我下周出差，帮我申请 7 天 VPN",
}

func runDemo(ctx context.Context, args []string, std stdio) error {
	stdout := std.out
	fs := flag.NewFlagSet("hermes demo", flag.ContinueOnError)
	fs.SetOutput(std.err)
	interactive := fs.Bool("i", false, "after the scripted conversation, keep chatting in the terminal")
	verbose := fs.Bool("v", false, "show the gateway's logs")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	// Fresh signing keys per run, one per backend (HR, IT), handed to the
	// skills through the environment as a real deployment would.
	hrKey, itKey, callbackKey := randomHex(32), randomHex(32), randomHex(16)
	os.Setenv(skills.SampleHRKeyEnv, hrKey)
	os.Setenv(skills.SampleITKeyEnv, itKey)
	backend := demobackend.NewWithOptions(demobackend.Options{HMACKey: []byte(hrKey), ITKey: []byte(itKey), Now: time.Now})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: backend, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	backendURL := "http://" + ln.Addr().String()
	logf("demo HR/IT backend: %s (verifies the signed caller identity on every request)", backendURL)

	// Hermes' own HTTP side, where the backend posts async results.
	gwLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	cfg := demoConfig(dbURL)
	cfg.Skills.BaseURL = backendURL
	cfg.Server.PublicURL = "http://" + gwLn.Addr().String()
	cfg.Server.CallbackKey = callbackKey + "-callbacks"
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
	gwSrv := &http.Server{Handler: sess.gw.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go gwSrv.Serve(gwLn) //nolint:errcheck // closed below
	defer gwSrv.Close()

	fmt.Fprintf(stdout, "\n== Hermes demo: you are %s (%s), writing through the console channel ==\n\n", user.Name, user.UserID)
	seen := 0
	showCalls := func() {
		calls := backend.Calls()
		for _, c := range calls[seen:] {
			fmt.Fprintf(stdout, "   [backend] POST %s → HTTP %d; caller from the signed headers: user=%s channel=%s corp=%s request=%s\n",
				c.Path, c.Status, c.Identity.UserID, c.Identity.Channel, c.Identity.CorpID, shortID(c.RequestID))
		}
		seen = len(calls)
	}
	for _, line := range demoScript {
		fmt.Fprintf(stdout, "你> %s\n", line)
		if _, err := sess.ask(ctx, line); err != nil {
			return err
		}
		showCalls()
		fmt.Fprintln(stdout)
	}
	// IT approves the VPN request: the backend posts the result to the
	// callback URL Hermes gave it, and Hermes delivers it to this chat.
	if pending := backend.Pending(); len(pending) > 0 {
		fmt.Fprintf(stdout, "   [backend] IT approves %s and posts the result to Hermes' callback URL\n", strings.Join(pending, ", "))
		if err := backend.CompleteAsync(ctx); err != nil {
			return fmt.Errorf("demo backend callback: %w", err)
		}
		if _, err := sess.next(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout, "The backend never read a user id from the model's arguments: Hermes signed the sender's identity into the request headers, "+
		"bound to that one request (method, path, body, nonce, skill).")
	if err := demoAttachments(ctx, sess, stdout); err != nil {
		return err
	}
	if err := demoMemory(ctx, sess, stdout); err != nil {
		return err
	}
	if err := demoKnowledge(ctx, sess, stdout); err != nil {
		return err
	}
	if err := demoReport(ctx, sess, user, stdout); err != nil {
		return err
	}
	showCalls()
	if *interactive {
		return sess.repl(ctx, std.in, stdout)
	}
	return nil
}

// demoReport creates the sample weekly IT-ticket report for the demo
// user, sends it now to this terminal (as text with a table: a terminal
// shows no pictures) and writes its bar chart to a PNG file.
func demoReport(ctx context.Context, sess *consoleSession, user channels.Identity, stdout io.Writer) error {
	fmt.Fprintln(stdout, "\n== Scheduled report: 上周工单统计, every Monday 09:00, run now ==")
	owner := store.ReportOwner{Channel: console.ChannelName, Account: consoleAccount, Corp: user.CorpID, User: user.UserID, Name: user.Name}
	rep, err := sess.reports.CreateReport(ctx, reports.NewReport{
		Name: "上周工单统计", Cron: "0 9 * * 1", TZ: "Asia/Shanghai", Owner: owner, ByAdmin: true,
		Spec: reports.Spec{Skill: "it_ticket_weekly", Template: "**{{.Report}}**（{{.Data.week}}）\n\n{{.Data.summary}}",
			Chart: &reports.ChartSpec{Type: "bar", Title: "上周 IT 工单", Rows: "categories", Label: "category",
				Values: []string{"opened", "resolved"}, Names: []string{"新建", "已解决"}}},
		Targets: []reports.TargetRef{{Channel: console.ChannelName, Account: consoleAccount, ChatType: channels.ChatSingle, ChatID: user.UserID}},
	})
	if errors.Is(err, store.ErrReportExists) { // a demo database kept from an earlier run
		rep, err = demoReportByName(ctx, sess.reports, owner, "上周工单统计")
	}
	if err != nil {
		return fmt.Errorf("demo report: %w", err)
	}
	if _, err := sess.reports.RunReportNow(ctx, rep.ID, nil); err != nil {
		return err
	}
	if _, err := sess.next(ctx); err != nil {
		return err
	}
	_, png, err := sess.reports.RenderReport(ctx, rep.ID, nil)
	if err != nil {
		return err
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hermes-report-%d.png", rep.ID))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "   [report] chart written to %s (%d bytes); chats that show pictures get it as an image\n", path, len(png))
	return nil
}

func demoReportByName(ctx context.Context, reps *reports.Service, owner store.ReportOwner, name string) (store.Report, error) {
	rs, err := reps.ListReports(ctx, &owner)
	if err != nil {
		return store.Report{}, err
	}
	for _, r := range rs {
		if r.Name == name {
			return r.Report, nil
		}
	}
	return store.Report{}, store.ErrNotFound
}

// demoConfig is the embedded default configuration of the demo.
func demoConfig(dbURL string) *config.Config {
	cfg := &config.Config{}
	cfg.Database.URL = dbURL
	// The offline model takes images (it counts them); a real one says
	// whether it does with HERMES_MODEL_VISION=true.
	cfg.Model.Provider, cfg.Model.Vision = "offline", true
	if base, name := os.Getenv("HERMES_MODEL_BASE_URL"), os.Getenv("HERMES_MODEL_NAME"); base != "" && name != "" {
		cfg.Model = config.ModelConfig{Provider: "openai", BaseURL: base, Name: name, APIKey: os.Getenv("HERMES_MODEL_API_KEY"),
			Vision: os.Getenv("HERMES_MODEL_VISION") == "true"}
	}
	cfg.ApplyDefaults()
	return cfg
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

func shortID(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return strings.TrimSpace(s)
}
