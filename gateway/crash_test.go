package gateway_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// workerProcessEnv makes the test binary run as a bare Hermes worker
// process (see TestMain), so a test can kill it like a crashed server.
const workerProcessEnv = "HERMES_TEST_WORKER_CONFIG"

// testParallel is how many tests run at once unless -test.parallel says
// otherwise: the tests wait on sockets, timers and Postgres, so more than
// GOMAXPROCS (2 here) keep the cores busy; but Postgres does most of the
// work (a backend's start costs 45 ms of CPU here), and past 4 the package
// took longer (4: 61-63 s; 8: 67-78 s; 12: over the server's connections).
const testParallel = "4"

func TestMain(m *testing.M) {
	if path := os.Getenv(workerProcessEnv); path != "" {
		runWorkerProcess(path)
		return
	}
	flag.Parse()
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", testParallel)
	}
	os.Exit(storetest.Main(m))
}

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// ackProcessEnv, set beside workerProcessEnv, makes the worker process
// one that only takes callbacks, on the address it names.
const ackProcessEnv = "HERMES_TEST_ACK_LISTEN"

// runWorkerProcess is `hermes serve` without HTTP: it works the queues
// until killed. With ackProcessEnv it is the opposite: HTTP only, no queue.
func runWorkerProcess(configPath string) {
	ctx := context.Background()
	cfg, err := config.LoadConfig(configPath)
	if err != nil {
		panic(err)
	}
	pool, err := store.Open(ctx, cfg.Database.URL, cfg.Database.MaxConns)
	if err != nil {
		panic(err)
	}
	deps := gateway.Deps{Pool: pool, Platforms: gatewaytest.Platforms}
	listen := os.Getenv(ackProcessEnv)
	if listen != "" {
		deps.Queues, deps.Partial = map[string]int{}, true
	}
	gw, err := gateway.New(ctx, cfg, deps)
	if err != nil {
		panic(err)
	}
	if err := gw.Start(ctx); err != nil {
		panic(err)
	}
	if listen != "" {
		panic(http.ListenAndServe(listen, gw.Handler()))
	}
	select {}
}

// Fifty runs are in flight in a worker process when it is killed (kill
// -9, no cleanup). A fresh worker answers each message exactly once, as
// soon as the dead worker's session leases lapse.
func TestWorkerKilledMidRunDeliversOnceAfterRestart(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	// A short session lease, so the dead worker's runs are taken up soon;
	// the README states the figure with the default lease (10 s).
	lease := cmp.Or(os.Getenv("HERMES_TEST_RUN_LEASE"), "2s")
	// The runs must not end by themselves (run_timeout, the processing
	// hint) before all fifty have started, however loaded the machine.
	extra := "agent:\n  run_timeout: 60s\nworker:\n  run_lease: " + lease + "\n  processing_hint_after: 10m\n"
	cfgPath := filepath.Join(t.TempDir(), "hermes.yaml")
	if err := os.WriteFile(cfgPath, []byte(h.ConfigYAML(extra)), 0o600); err != nil {
		t.Fatal(err)
	}

	// Model calls hang until their client goes away while the first worker
	// lives: those are the runs it is killed in. Later calls answer at once.
	const runs = 50
	allStarted := make(chan struct{})
	var killed atomic.Bool
	var calls atomic.Int32
	h.Model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		if killed.Load() {
			return openaitest.Reply{Content: "重启后的回答"}
		}
		return openaitest.Reply{Hook: func(ctx context.Context) error {
			if calls.Add(1) == runs {
				close(allStarted)
			}
			<-ctx.Done()
			return ctx.Err()
		}}
	})

	// This process only takes callbacks; the worker is another process.
	h.Start(gateway.Deps{Queues: map[string]int{}, Partial: true})
	worker := exec.Command(os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), workerProcessEnv+"="+cfgPath)
	worker.Stdout, worker.Stderr = t.Output(), t.Output()
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill(); _, _ = worker.Process.Wait() })

	ctx := gatewaytest.WithTimeout(t, 90*time.Second)
	for i := range runs {
		u, body := h.CallbackRequest(gatewaytest.TextXML(fmt.Sprintf("user%02d", i), "我还有几天年假？", fmt.Sprintf("90%02d", i)), time.Now())
		if status, _ := gatewaytest.Post(t, u, body); status != 200 {
			t.Fatalf("callback answered %d", status)
		}
	}
	select {
	case <-allStarted:
	case <-ctx.Done():
		t.Fatalf("the worker process called the model %d times, want %d", calls.Load(), runs)
	}
	killed.Store(true)
	if err := worker.Process.Kill(); err != nil { // SIGKILL mid-run: no cleanup at all
		t.Fatal(err)
	}
	kill := time.Now()
	var exitErr *exec.ExitError
	if err := worker.Wait(); !errors.As(err, &exitErr) {
		t.Fatalf("worker exit: %v, want killed", err)
	}
	if n := len(h.WeComAPI.Messages()); n != 0 {
		t.Fatalf("%d messages sent before the runs finished", n)
	}

	// A fresh worker (another replica, or the restarted one) takes over.
	restarted, err := gateway.New(ctx, h.ConfigWith(extra), gateway.Deps{Pool: h.Pool, Logger: gatewaytest.Logger(t), Platforms: gatewaytest.Platforms})
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restarted.Stop(context.Background()) })

	if _, err := h.WeComAPI.WaitMessages(ctx, runs); err != nil {
		t.Fatal(err)
	}
	t.Logf("last of %d replies delivered %s after kill -9 (worker.run_lease %s)", runs, time.Since(kill).Round(100*time.Millisecond), lease)

	// The dead worker's River jobs are still "running"; River's rescuer
	// makes them available again after worker.rescue_after. Do what the
	// rescuer does, now: the jobs find their messages answered.
	if _, err := h.Pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE state = 'running'`); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	perUser := map[string]int{}
	for _, m := range h.WeComAPI.Messages() {
		if m.Content != "重启后的回答" {
			t.Errorf("sent %q to %s, want the answer", m.Content, m.ToUser)
		}
		perUser[m.ToUser]++
	}
	for user, n := range perUser {
		if n != 1 {
			t.Errorf("%s got %d replies, want 1", user, n)
		}
	}
	if len(perUser) != runs {
		t.Fatalf("%d users answered, want %d", len(perUser), runs)
	}
	if n := h.Count(`SELECT count(*) FROM runs`); n != runs {
		t.Fatalf("stored runs = %d, want %d", n, runs)
	}
}
