package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserNames are the programs tried, in order, when HERMES_CHROMIUM does
// not name one. .ci/run installs Debian's chromium when none is found.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser returns the browser to drive. There is no skip: a machine
// without one fails this test, so a missing browser is never mistaken for
// a passing console.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HERMES_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no browser for the console tests: none of %v on PATH and HERMES_CHROMIUM unset; install one with `apt-get install -y chromium fonts-noto-cjk` (.ci/run does)", browserNames)
	return ""
}

// screenshotDir is where the screenshots go: HERMES_SCREENSHOT_DIR, or a
// fresh folder that the test prints.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("HERMES_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "hermes-console-screenshots-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConsoleInABrowser drives one headless Chromium through the console:
// sign in, run the channel self-test against the fake WeCom (which also
// fills the token cache the overview shows), find a conversation, open its
// run and see the skill call with the identity it ran as, and check that a
// viewer cannot reload skills.
func TestConsoleInABrowser(t *testing.T) {
	browser := findBrowser(t)
	f := newFixture(t)
	shots := screenshotDir(t)
	t.Logf("console screenshots in %s", shots)

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	base := f.srv.URL + "/console"

	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	signIn := func(user, password string) {
		t.Helper()
		do("sign in as "+user,
			chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS("#username")),
			chromedp.SendKeys(chromedp.CSS("#username"), user),
			chromedp.SendKeys(chromedp.CSS("#password"), password),
			chromedp.Click(chromedp.CSS("#login-submit")),
			chromedp.WaitVisible(chromedp.CSS("#who")))
	}

	signIn(adminUser, adminPass)
	f.wecom.FailNextSends(60020, 1)
	do("channel self-test",
		chromedp.Navigate(base+"/selftest"),
		chromedp.SetValue(chromedp.CSS("#st-channel"), "wecom"),
		chromedp.SendKeys(chromedp.CSS("#st-account"), testApp),
		chromedp.SendKeys(chromedp.CSS("#st-target"), "zhangsan"),
		chromedp.Click(chromedp.CSS("#st-send")),
		chromedp.WaitVisible(chromedp.CSS("#st-explanation")))
	if raw, why := text("#st-raw"), text("#st-explanation"); !strings.Contains(raw, "60020") || !strings.Contains(why, "企业可信IP") {
		t.Errorf("self-test answer %q explained %q, want errcode 60020 and the trusted-IP list", raw, why)
	}
	shot("console-selftest.png")

	do("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#accounts")))
	if got := text("#accounts"); !strings.Contains(got, "acc-1") {
		t.Errorf("overview accounts %q, want the test account", got)
	}
	// The charts after the fixture's message, then after a day of
	// history: drawn, and their tables' numbers are the database's.
	chartsMatch(t, ctx, f, base)
	fillHistory(t, f)
	chartsMatch(t, ctx, f, base)
	checkAxes(t, ctx, base)
	checkDrillDown(t, ctx, base)
	checkRefresh(t, ctx, f, base)
	do("overview with history", chromedp.Navigate(base+"/?trend=24h"), chromedp.WaitVisible(chromedp.CSS("#chart-stops svg")))
	swatches, err := chromedp.Run(ctx, chromedp.Evaluate[[]legendSwatch](legendSwatches))
	if err != nil {
		t.Fatal(err)
	}
	checkStopColors(t, swatches)
	do("overview charts", chromedp.Navigate(base+"/?trend=24h"), chromedp.WaitVisible(chromedp.CSS("#chart-traffic svg")))
	shot("console-overview.png")
	do("skills charts", chromedp.Navigate(base+"/skills?trend=24h"), chromedp.WaitVisible(chromedp.CSS("#chart-skill-calls svg")))
	shot("console-skills.png")

	do("find the conversation",
		chromedp.Navigate(base+"/conversations"),
		chromedp.SendKeys(chromedp.CSS("#filter-user"), "zhangsan"),
		chromedp.Click(chromedp.CSS("#search")),
		// The results page renders the filter as an attribute; the page the
		// search was typed into does not, so this waits for the new page.
		chromedp.WaitVisible(chromedp.CSS(`#filter-user[value="zhangsan"]`)),
		chromedp.WaitVisible(chromedp.CSS("a.open-conversation")),
		chromedp.Click(chromedp.CSS("a.open-conversation")),
		chromedp.WaitVisible(chromedp.CSS("a.run-link")),
		chromedp.Click(chromedp.CSS("a.run-link")),
		chromedp.WaitVisible(chromedp.CSS("#timeline")))
	timeline := text("#timeline")
	for _, want := range []string{"hr_leave_balance", "user=zhangsan", "corp=corp-test", answeredText} {
		if !strings.Contains(timeline, want) {
			t.Errorf("run timeline lacks %q:\n%s", want, timeline)
		}
	}
	if got := text("#stop-reason"); got != "finished" {
		t.Errorf("stop reason %q, want finished", got)
	}
	shot("console-run-timeline.png")

	// A document uploaded through the page's own form (multipart, its
	// CSRF field) is listed; a damaged one is named with its reason.
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "休假制度.md"), filepath.Join(dir, "scan.pdf")
	if err := os.WriteFile(good, []byte(leaveRules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("%PDF-1.7\nnot a pdf"), 0o644); err != nil {
		t.Fatal(err)
	}
	upload := func(file string, wait string) {
		t.Helper()
		do("upload "+filepath.Base(file),
			chromedp.Navigate(base+"/knowledge"),
			chromedp.WaitVisible(chromedp.CSS("#kb-upload")),
			chromedp.SetUploadFiles(chromedp.CSS(`#kb-upload input[type=file]`), []string{file}),
			chromedp.SendKeys(chromedp.CSS(`#kb-upload input[name=version]`), "2025版"),
			chromedp.Submit(chromedp.CSS("#kb-upload")),
			chromedp.WaitVisible(chromedp.CSS(wait)))
	}
	upload(good, "#kb-notice")
	if got, docs := text("#kb-notice"), text("#kb-documents"); !strings.Contains(got, "已添加《休假制度》") || !strings.Contains(docs, "2025版") {
		t.Errorf("after the upload: notice %q, documents %q", got, docs)
	}
	upload(bad, "#kb-error")
	if got := text("#kb-error"); got != "已拒绝 scan.pdf：文件损坏或无法解析" {
		t.Errorf("a damaged upload says %q", got)
	}
	shot("console-knowledge.png")

	do("sign out", chromedp.Submit(chromedp.CSS("header form")), chromedp.WaitVisible(chromedp.CSS("#username")))
	signIn(viewerUser, viewerPass)
	// A viewer sees the same charts, with the same numbers.
	chartsMatch(t, ctx, f, base)
	do("viewer's skills page", chromedp.Navigate(base+"/skills"), chromedp.WaitVisible(chromedp.CSS("#viewer-note")))
	hasButton, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#reload-skills') !== null`))
	if err != nil || hasButton {
		t.Errorf("viewer sees the reload button: %v, %v", hasButton, err)
	}
	// The button is hidden; a hand-made POST with the viewer's own CSRF
	// token is refused by the server as well.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch('/console/skills/reload', {method: 'POST',
		headers: {'X-CSRF-Token': document.querySelector('input[name=csrf]').value}}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != 403 {
		t.Errorf("viewer's reload POST: %d, %v; want 403", status, err)
	}
}
