package gateway_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
)

// workerProcessEnv makes the test binary run as a bare Hermes worker
// process (see TestMain), so a test can kill it like a crashed server.
const workerProcessEnv = "HERMES_TEST_WORKER_CONFIG"

func TestMain(m *testing.M) {
	if path := os.Getenv(workerProcessEnv); path != "" {
		runWorkerProcess(path)
		return
	}
	os.Exit(m.Run())
}

// runWorkerProcess is `hermes serve` without HTTP: it works the queues until killed.
func runWorkerProcess(configPath string) {
	ctx := context.Background()
	cfg, err := gateway.LoadConfig(configPath)
	if err != nil {
		panic(err)
	}
	pool, err := store.Open(ctx, cfg.Database.URL, cfg.Database.MaxConns)
	if err != nil {
		panic(err)
	}
	gw, err := gateway.New(ctx, cfg, gateway.Deps{Pool: pool, Platforms: platforms})
	if err != nil {
		panic(err)
	}
	if err := gw.Start(ctx); err != nil {
		panic(err)
	}
	select {}
}

func TestWorkerKilledMidRunDeliversOnceAfterRestart(t *testing.T) {
	h := newHarness(t)
	// A short session lease, so the dead worker's run is taken up soon; the
	// README states the figure with the default lease (10 s).
	lease := cmp.Or(os.Getenv("HERMES_TEST_RUN_LEASE"), "2s")
	extra := "agent:\n  run_timeout: 5s\nworker:\n  run_lease: " + lease + "\n"
	cfgPath := filepath.Join(t.TempDir(), "hermes.yaml")
	if err := os.WriteFile(cfgPath, []byte(h.configYAML(extra)), 0o600); err != nil {
		t.Fatal(err)
	}

	// The first model call hangs until its client goes away: that is the
	// run the worker is killed in. Later calls answer at once.
	started := make(chan struct{})
	var once sync.Once
	var calls int
	var mu sync.Mutex
	h.model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return openaitest.Reply{Hook: func(ctx context.Context) error {
				once.Do(func() { close(started) })
				<-ctx.Done()
				return ctx.Err()
			}}
		}
		return openaitest.Reply{Content: "重启后的回答"}
	})

	// This process only takes callbacks; the worker is another process.
	h.start(gateway.Deps{Queues: map[string]int{}})
	worker := exec.Command(os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), workerProcessEnv+"="+cfgPath)
	worker.Stdout, worker.Stderr = t.Output(), t.Output()
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill(); _, _ = worker.Process.Wait() })

	ctx := withTimeout(t, 90*time.Second)
	u, body := h.callbackRequest(textXML("zhangsan", "我还有几天年假？", "9009"), time.Now())
	if status, _ := post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the worker process never called the model")
	}
	if err := worker.Process.Kill(); err != nil { // SIGKILL mid-run: no cleanup at all
		t.Fatal(err)
	}
	killed := time.Now()
	var exitErr *exec.ExitError
	if err := worker.Wait(); !errors.As(err, &exitErr) {
		t.Fatalf("worker exit: %v, want killed", err)
	}
	if n := len(h.wecomAPI.Messages()); n != 0 {
		t.Fatalf("%d messages sent before the run finished", n)
	}

	// A fresh worker (another replica, or the restarted one) takes over.
	restarted, err := gateway.New(ctx, h.config2(extra), gateway.Deps{Pool: h.pool, Logger: testLogger(t), Platforms: platforms})
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restarted.Stop(context.Background()) })

	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("reply delivered %s after kill -9 (worker.run_lease %s)", time.Since(killed).Round(100*time.Millisecond), lease)

	// The dead worker's River job is still "running"; River's rescuer makes
	// it available again after worker.rescue_after. Do what the rescuer
	// does, now: the job finds the message answered and sends nothing.
	if _, err := h.pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE state = 'running'`); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	msgs := h.wecomAPI.Messages()
	if len(msgs) != 1 || msgs[0].Content != "重启后的回答" || msgs[0].ToUser != "zhangsan" {
		t.Fatalf("delivered %+v, want exactly one reply to zhangsan", msgs)
	}
	if n := h.count(`SELECT count(*) FROM runs`); n != 1 {
		t.Fatalf("stored runs = %d, want 1", n)
	}
}
