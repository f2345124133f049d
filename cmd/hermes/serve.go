package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/admin"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/web/console"
)

// newFlags returns a subcommand's flag set with the --config flag.
func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("hermes "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "hermes.yaml", "configuration file (YAML, ${ENV} expanded)")
	return fs, path
}

// parseAndLoad parses args and loads the configuration file.
func parseAndLoad(fs *flag.FlagSet, path *string, args []string) (*config.Config, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	return config.LoadConfig(*path)
}

// parseFlags parses args: -h or --help prints the flags and ends the
// command successfully (errHelp); a bad flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	}
	return errUsage
}

// openDB connects and migrates.
func openDB(ctx context.Context, cfg *config.Config) (*pgxpool.Pool, error) {
	pool, err := store.Open(ctx, cfg.Database.URL, cfg.Database.MaxConns)
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// loadAndOpen parses args, loads the configuration, connects and migrates.
func loadAndOpen(ctx context.Context, fs *flag.FlagSet, path *string, args []string) (*config.Config, *pgxpool.Pool, error) {
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return nil, nil, err
	}
	pool, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, pool, nil
}

// loadChecked parses args and loads the configuration, then checks it the
// way serve builds it (gateway.Check: the model, skills, every platform
// section) before anything touches the database, so that migrate and serve
// accept and refuse the same configurations. The check's warnings (a skill
// secret missing) go to log.
func loadChecked(ctx context.Context, fs *flag.FlagSet, path *string, args []string, log *slog.Logger) (*config.Config, error) {
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return nil, err
	}
	if err := gateway.Check(ctx, cfg, gateway.Deps{Platforms: platforms, Features: newFeatures(), Logger: log}); err != nil {
		return nil, err
	}
	return cfg, nil
}

func runMigrate(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("migrate", std.err)
	cfg, err := loadChecked(ctx, fs, path, args, slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	pool, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	pool.Close()
	fmt.Fprintln(std.out, "migrations applied")
	return nil
}

func runServe(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("serve", std.err)
	// gateway.New logs the check's warnings again, with serve's own logger.
	cfg, err := loadChecked(ctx, fs, path, args, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	pool, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	logger := newLogger(cfg.Log, std.err)
	slog.SetDefault(logger)
	tracing, shutdownTracing, err := newTracing(ctx, cfg.Tracing)
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(flushCtx) // spans still batched; losing them loses no message
	}()
	if err := console.Bootstrap(ctx, pool, os.LookupEnv, slog.Default()); err != nil {
		return err
	}
	// The operators' pages (the console, the status page), served only by
	// serve; the console's report actions are the reports feature's.
	features := newFeatures()
	rep, _ := gateway.FeatureOf[*reports.Service](features)
	features = append(features, admin.New(admin.ServiceReports{Service: rep}))
	gw, err := gateway.New(ctx, cfg, gateway.Deps{Pool: pool, Platforms: platforms, Features: features, Logger: logger, Tracing: tracing})
	if err != nil {
		return err
	}
	if err := gw.Start(ctx); err != nil {
		return err
	}
	srv := ops.NewHTTPServer(cfg.Server, cfg.Server.Listen, gw.Handler())
	servers, keys := []*http.Server{srv}, []string{"server.listen"}
	// The console, /metrics and the status page on a listener of their own
	// (server.admin_listen), when one is set.
	if h := gw.AdminHandler(); h != nil {
		servers, keys = append(servers, ops.NewHTTPServer(cfg.Server, cfg.Server.AdminListen, h)), append(keys, "server.admin_listen")
	}
	// Every listener is bound before any serves: an address that cannot be
	// bound stops the start naming its key, and once the public listener
	// answers, the admin one does too.
	errc := make(chan error, len(servers))
	listeners, err := listenAll(servers, keys)
	if err != nil {
		errc <- err
	}
	for i, l := range listeners {
		go func() { errc <- servers[i].Serve(l) }()
	}
	if err == nil {
		slog.Info("hermes serving", "listen", cfg.Server.Listen, "admin_listen", cfg.Server.AdminListen)
	}

	// SIGHUP reloads the skills (a broken set is refused and the old
	// stays) and syncs knowledge.dir in the background (replicas sync one
	// at a time; a refused file is logged by name).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	kb, _ := gateway.FeatureOf[*knowledge.Service](features)
	var syncs sync.WaitGroup
	defer syncs.Wait()
wait:
	for {
		select {
		case err = <-errc:
			break wait
		case <-ctx.Done():
			break wait
		case <-hup:
			if rerr := gw.ReloadSkills(); rerr != nil {
				slog.Error("skills reload refused; keeping the current skills", "err", rerr)
			}
			if kb != nil && cfg.Knowledge.Dir != "" {
				syncs.Go(func() { _ = kb.SyncFolder(ctx) }) // logged by SyncFolder
			}
		}
	}
	// SIGTERM: /readyz turns 503 while every listener still serves, for
	// server.drain_delay, so the load balancer takes the replica out before
	// its listener closes (a closed one is "connection refused", not
	// "not ready"); then the listeners close, and requests in flight and
	// running jobs get server.shutdown_grace to finish. Past it jobs are
	// cancelled and taken up again by another replica (their session
	// leases lapse, the sweeper hands the messages on).
	gw.Drain()
	if err == nil {
		slog.Info("draining: /readyz answers 503", "drain_delay", cfg.Server.DrainDelay)
		time.Sleep(cfg.Server.DrainDelay) // the load balancer's probes need real time
	}
	slog.Info("shutting down", "shutdown_grace", cfg.Server.ShutdownGrace)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Server.ShutdownGrace)
	defer cancel()
	var stopping sync.WaitGroup
	for _, s := range servers {
		stopping.Go(func() { _ = s.Shutdown(shutdownCtx) })
	}
	stopping.Wait()
	if stopErr := gw.Stop(shutdownCtx); stopErr != nil {
		slog.Warn("workers stopped with error", "err", stopErr)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// listenAll binds the address of each server, keys[i] naming the
// configuration key of servers[i] in the error; on an error none is left
// bound.
func listenAll(servers []*http.Server, keys []string) ([]net.Listener, error) {
	var out []net.Listener
	for i, s := range servers {
		l, err := net.Listen("tcp", s.Addr)
		if err != nil {
			for _, bound := range out {
				bound.Close()
			}
			return nil, fmt.Errorf("%s %q: %w", keys[i], s.Addr, err)
		}
		out = append(out, l)
	}
	return out, nil
}
