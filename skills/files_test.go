package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// fakeFiles plays the gateway's FileIssuer: it answers every call with
// urls (or err) and records who asked.
type fakeFiles struct {
	mu    sync.Mutex
	urls  []string
	err   error
	calls []string // "user origin skill" per call
}

func (f *fakeFiles) Files(_ context.Context, c skills.Caller, skill string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %d %s", c.UserID, c.Origin, skill))
	return f.urls, f.err
}

func (f *fakeFiles) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// filesBackend answers each request with the next status of its script
// (the last one repeats) and keeps, per request, the header as sent, what
// FileURLs makes of it and whether the signature still verifies.
type filesBackend struct {
	mu       sync.Mutex
	statuses []int
	headers  []string // X-Hermes-Files; "<none>" when absent
	urls     [][]string
	verified []error
	nonces   *skills.NonceCache
}

func (b *filesBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	_, verr := skills.VerifyRequest(r, body, testKey, skills.VerifyOptions{Audience: "doc_scan", Now: testNow, Nonces: b.nonces})
	b.mu.Lock()
	header := "<none>"
	if vs := r.Header.Values(skills.HeaderFiles); len(vs) > 0 {
		header = strings.Join(vs, "|")
	}
	b.headers = append(b.headers, header)
	b.urls = append(b.urls, skills.FileURLs(r))
	b.verified = append(b.verified, verr)
	status := b.statuses[min(len(b.headers)-1, len(b.statuses)-1)]
	b.mu.Unlock()
	w.WriteHeader(status)
	io.WriteString(w, `{"ok":true}`)
}

// filesRegistry loads one signed skill doc_scan from SKILL.md lines (the
// name, description, endpoint and key are given) against backend.
func filesRegistry(t *testing.T, backend http.Handler, files skills.FileIssuer, lines ...string) *skills.Registry {
	t.Helper()
	fsys := fstest.MapFS{"doc_scan/SKILL.md": skill(append([]string{"name: doc_scan", "description: read the attached invoices",
		"endpoint: /scan", "identity: {hmac_key_env: HR_HMAC}"}, lines...)...)}
	reg, err := skills.LoadRegistry(fsys, skills.Options{BaseURL: serverURL(t, backend), Getenv: secrets, Files: files,
		Now: func() time.Time { return testNow }, Sleep: (&sleeps{}).sleep})
	if err != nil {
		t.Fatalf("LoadRegistry: %v", err)
	}
	return reg
}

// fromMessage is zhang asking in inbound message 7.
var fromMessage = func() skills.Caller { c := zhang; c.Origin = 7; return c }()

// TestFiles_HeaderSameOnRetry: the issuer is asked once per call, and every
// attempt, the retried one too, carries its URLs in order; the unsigned
// header does not disturb the signature.
func TestFiles_HeaderSameOnRetry(t *testing.T) {
	urls := []string{"https://hermes.example.com/v1/files/tok-b?x=1,2", "https://hermes.example.com/v1/files/tok-a"}
	issuer := &fakeFiles{urls: urls}
	backend := &filesBackend{statuses: []int{503, 200}, nonces: skills.NewNonceCache()}
	reg := filesRegistry(t, backend, issuer, "files: true", "retry: {max_attempts: 2, on: [5xx]}")

	if _, err := reg.Call(context.Background(), fromMessage, "doc_scan", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if got := issuer.called(); len(got) != 1 || got[0] != "zhangsan 7 doc_scan" {
		t.Errorf("issuer calls = %q, want one for zhangsan's message 7", got)
	}
	want := strings.Join(urls, " ")
	if len(backend.headers) != 2 || backend.headers[0] != want || backend.headers[1] != want {
		t.Errorf("%s per attempt = %q, want %q on both", skills.HeaderFiles, backend.headers, want)
	}
	for i, got := range backend.urls {
		if fmt.Sprint(got) != fmt.Sprint(urls) {
			t.Errorf("attempt %d: FileURLs = %q, want %q", i+1, got, urls)
		}
		if backend.verified[i] != nil {
			t.Errorf("attempt %d: VerifyRequest: %v", i+1, backend.verified[i])
		}
	}
}

func TestFiles_NoHeader(t *testing.T) {
	t.Run("NoAttachments", func(t *testing.T) {
		issuer := &fakeFiles{urls: []string{}}
		backend := &filesBackend{statuses: []int{200}}
		reg := filesRegistry(t, backend, issuer, "files: true")
		if _, err := reg.Call(context.Background(), fromMessage, "doc_scan", nil); err != nil {
			t.Fatalf("Call: %v", err)
		}
		if len(issuer.called()) != 1 || fmt.Sprint(backend.headers) != "[<none>]" {
			t.Errorf("issuer calls %q, headers %q; want one call and no header", issuer.called(), backend.headers)
		}
	})
	t.Run("SkillTakesNoFiles", func(t *testing.T) {
		issuer := &fakeFiles{urls: []string{"https://hermes.example.com/v1/files/tok-a"}}
		backend := &filesBackend{statuses: []int{200}}
		reg := filesRegistry(t, backend, issuer)
		if _, err := reg.Call(context.Background(), fromMessage, "doc_scan", nil); err != nil {
			t.Fatalf("Call: %v", err)
		}
		if len(issuer.called()) != 0 || fmt.Sprint(backend.headers) != "[<none>]" {
			t.Errorf("issuer calls %q, headers %q; want none of either", issuer.called(), backend.headers)
		}
	})
}

// TestFiles_Failures: without URLs the backend is never called.
func TestFiles_Failures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		issuer  skills.FileIssuer
		want    error
		wantMsg string
	}{
		{"NoIssuer", nil, skills.ErrMisconfigured, "no file issuer is configured"},
		{"IssuerFails", &fakeFiles{err: errors.New("media store down")}, skills.ErrUnavailable, "media store down"},
		{"URLWithSpace", &fakeFiles{urls: []string{"https://hermes.example.com/v1/files/a b"}}, skills.ErrUnavailable, "file URL 1 contains whitespace"},
		{"RelativeURL", &fakeFiles{urls: []string{"https://hermes.example.com/f/1", "/v1/files/tok"}}, skills.ErrUnavailable, "file URL 2 is not an absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend := &filesBackend{statuses: []int{200}}
			reg := filesRegistry(t, backend, tc.issuer, "files: true")
			_, err := reg.Call(context.Background(), fromMessage, "doc_scan", nil)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.wantMsg) {
				t.Errorf("err = %v, want %v mentioning %q", err, tc.want, tc.wantMsg)
			}
			if len(backend.headers) != 0 {
				t.Errorf("backend called %d times", len(backend.headers))
			}
		})
	}
}

func TestFileURLs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"Absent", nil, nil},
		{"Empty", []string{""}, nil},
		{"One", []string{"https://h/f/a"}, []string{"https://h/f/a"}},
		{"InOrderWithCommas", []string{"https://h/f/b?x=1,2 https://h/f/a"}, []string{"https://h/f/b?x=1,2", "https://h/f/a"}},
		{"EmptyPiecesIgnored", []string{"  https://h/f/a   https://h/f/b "}, []string{"https://h/f/a", "https://h/f/b"}},
		{"SeveralLines", []string{"https://h/f/a", "https://h/f/b"}, []string{"https://h/f/a", "https://h/f/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/scan", nil)
			for _, v := range tc.values {
				r.Header.Add(skills.HeaderFiles, v)
			}
			if got := skills.FileURLs(r); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("FileURLs = %q, want %q", got, tc.want)
			}
		})
	}
}
