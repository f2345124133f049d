package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// shippedTags are the build tags of the binary as the Makefile and the
// Dockerfile build it: nomsgpack leaves gin's MessagePack binding (and its
// codec, a ninth of the binary) out; Hermes never binds MessagePack.
const shippedTags = "nomsgpack"

// exampleListen is hermes.example.yaml's listen line, which the benchmark
// points at a free port.
const exampleListen = `listen: ":8080"`

// TestShippedTagsAreTheBuildsTags: the benchmark measures the binary the
// Makefile and the Dockerfile build, so all three name the same tags.
func TestShippedTagsAreTheBuildsTags(t *testing.T) {
	for file, want := range map[string]string{"../../Makefile": "-tags=" + shippedTags, "../../Dockerfile": "-tags " + shippedTags} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not build with %q", file, want)
		}
	}
}

// idleAfterReady is how long a started replica runs before its memory is
// read: its start-up work done, its pollers and timers in their rhythm.
const idleAfterReady = 3 * time.Second

// BenchmarkServeStartup starts `hermes serve` with the example config
// (hermes.example.yaml, one WeCom app, a migrated database) as its own
// process and measures the time from exec to the first 200 of /readyz and
// the resident memory after idleAfterReady: anonymous (heap, stacks,
// runtime) and the binary's pages mapped from the page cache. It builds
// the binary twice, as shipped and with no build tags (the baseline), and
// interleaves their starts.
//
//	go test -run '^$' -bench ServeStartup -benchtime 1x ./cmd/hermes/
func BenchmarkServeStartup(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	dir := b.TempDir()
	builds := []struct{ name, tags string }{{"untagged", ""}, {"shipped", shippedTags}}
	bins := map[string]string{}
	for _, bd := range builds {
		bin := filepath.Join(dir, "hermes-"+bd.name)
		cmd := exec.Command("go", "build", "-trimpath", "-tags", bd.tags, "-ldflags", "-s -w", "-o", bin, ".")
		cmd.Env = append(withoutGOFLAGS(os.Environ()), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", bd.name, err, out)
		}
		bins[bd.name] = bin
	}
	example, err := os.ReadFile("../../hermes.example.yaml")
	if err != nil {
		b.Fatal(err)
	}
	type sample struct{ readyMS, rss, anon, file float64 }
	readyOf := func(x sample) float64 { return x.readyMS }
	rssOf := func(x sample) float64 { return x.rss }
	anonOf := func(x sample) float64 { return x.anon }
	fileOf := func(x sample) float64 { return x.file }
	got := map[string][]sample{}
	const starts = 4
	b.ResetTimer()
	for range b.N {
		for range starts {
			for _, bd := range builds {
				addr := freeAddr(b)
				cfg := filepath.Join(b.TempDir(), "hermes.yaml")
				yaml := strings.Replace(string(example), exampleListen, `listen: "`+addr+`"`, 1)
				if yaml == string(example) {
					b.Fatalf("hermes.example.yaml has no %s to replace", exampleListen)
				}
				if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
					b.Fatal(err)
				}
				ready, st := startIdle(b, bins[bd.name], cfg, addr, storetest.URL(b))
				got[bd.name] = append(got[bd.name], sample{float64(ready.Microseconds()) / 1000,
					st["VmRSS"] / 1024, st["RssAnon"] / 1024, (st["RssFile"] + st["RssShmem"]) / 1024})
			}
		}
	}
	b.StopTimer()
	for _, bd := range builds {
		fi, err := os.Stat(bins[bd.name])
		if err != nil {
			b.Fatal(err)
		}
		s := got[bd.name]
		col := func(f func(sample) float64, digits int) string {
			out := make([]string, len(s))
			for i := range s {
				out[i] = strconv.FormatFloat(f(s[i]), 'f', digits, 64)
			}
			return strings.Join(out, " ")
		}
		fmt.Printf("%-9s binary %.1f MB  ready ms [%s]  idle RSS MB [%s] = anonymous [%s] + binary pages [%s]\n",
			bd.name, float64(fi.Size())/1e6, col(readyOf, 0), col(rssOf, 1), col(anonOf, 1), col(fileOf, 1))
	}
	med := func(name string, f func(sample) float64) float64 {
		xs := make([]float64, 0, len(got[name]))
		for _, s := range got[name] {
			xs = append(xs, f(s))
		}
		return medianOf(xs)
	}
	fmt.Printf("shipped / untagged: idle RSS %.2f, ready %.2f (medians)\n",
		med("shipped", rssOf)/med("untagged", rssOf), med("shipped", readyOf)/med("untagged", readyOf))
	b.ReportMetric(med("shipped", rssOf), "idle-RSS-MB")
	b.ReportMetric(med("shipped", readyOf), "ready-ms")
}

// startIdle runs bin serve, waits for /readyz, lets it idle and returns
// the time to ready and /proc/<pid>/status in KiB, then stops it.
func startIdle(b *testing.B, bin, cfg, addr, dbURL string) (time.Duration, map[string]float64) {
	b.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Dir = "../.." // the example's skills.dir is relative to the checkout
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL,
		"HERMES_MODEL_BASE_URL=http://127.0.0.1:9/v1", "HERMES_MODEL_NAME=m", "HERMES_MODEL_API_KEY=k",
		"WECOM_CORP_ID=ww1", "WECOM_HR_AGENT_ID=1000002", "WECOM_HR_SECRET=s", "WECOM_HR_TOKEN=QDG6eK",
		"WECOM_HR_AES_KEY=jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C",
		"HERMES_IDENTITY_KEY=0123456789abcdef0123456789abcdef")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
	}()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			b.Fatalf("serve ended before ready: %v\n%s", waitErr, logs.String())
		case <-tick.C:
		}
		if time.Since(start) > 30*time.Second {
			b.Fatalf("not ready after 30 s:\n%s", logs.String())
		}
	}
	ready := time.Since(start)
	select {
	case <-exited:
		b.Fatalf("serve ended while idle: %v\n%s", waitErr, logs.String())
	case <-time.After(idleAfterReady):
	}
	return ready, procStatus(b, cmd.Process.Pid)
}

// procStatus reads the kB fields of /proc/<pid>/status.
func procStatus(b *testing.B, pid int) map[string]float64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if fields := strings.Fields(v); ok && len(fields) == 2 && fields[1] == "kB" {
			n, err := strconv.ParseFloat(fields[0], 64)
			if err == nil {
				st[k] = n
			}
		}
	}
	return st
}

func withoutGOFLAGS(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "GOFLAGS=") {
			out = append(out, e)
		}
	}
	return out
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
