package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/memory"
)

// topics are the fake model's dimensions: a text's vector has 1 in each
// topic one of whose words it holds, and a small constant last one (no
// text is a zero vector). Texts on one topic are similar whatever their
// words ("远程接入" and "VPN": cosine 1), texts on none or others are not
// (about 0.1).
var topics = [][]string{
	{"vpn", "远程接入", "内网"},
	{"办公室", "上海", "工位"},
	{"叫我", "称呼"},
}

// fakeVector is the fake model's vector of text.
func fakeVector(text string) []float32 {
	text = strings.ToLower(text)
	v := make([]float32, len(topics)+1)
	for i, words := range topics {
		for _, w := range words {
			if strings.Contains(text, w) {
				v[i] = 1
			}
		}
	}
	v[len(topics)] = 0.1
	return v
}

// fakeEmbeddings is an OpenAI-compatible embeddings endpoint: POST
// /v1/embeddings, OpenAI's wire format, fakeVector's vectors. With fail
// set it answers 500 as OpenAI does; answer, when set, replaces the body.
type fakeEmbeddings struct {
	*httptest.Server
	model, key string
	fail       atomic.Bool
	calls      atomic.Int32
	answer     func(w http.ResponseWriter, r *http.Request)
}

func newFakeEmbeddings(t *testing.T) *fakeEmbeddings {
	f := &fakeEmbeddings{model: "bge-m3", key: "sk-test"}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			t.Errorf("%s %s, want POST /v1/embeddings", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+f.key {
			t.Errorf("Authorization %q", got)
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields() // only what OpenAI's API defines, nothing empty
		if err := dec.Decode(&req); err != nil || req.Model != f.model || len(req.Input) != 1 {
			t.Errorf("request %+v, %v; want model %q and one input", req, err, f.model)
		}
		if f.fail.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
			return
		}
		if f.answer != nil {
			f.answer(w, r)
			return
		}
		vec, _ := json.Marshal(fakeVector(req.Input[0]))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":%s}],"model":%q,"usage":{"prompt_tokens":8,"total_tokens":8}}`,
			vec, f.model)
	}))
	t.Cleanup(f.Close)
	return f
}

// endpoint is memory.embeddings for f.
func (f *fakeEmbeddings) endpoint(timeout time.Duration) config.MemoryEmbeddings {
	return config.MemoryEmbeddings{MediaModel: config.MediaModel{BaseURL: f.URL + "/v1", APIKey: f.key, Name: f.model, Timeout: timeout},
		MinSimilarity: 0.3}
}

func TestEmbedderSpeaksOpenAI(t *testing.T) {
	t.Parallel()
	f := newFakeEmbeddings(t)
	e := memory.NewEmbedder(f.endpoint(time.Second))
	v, err := e.Embed(context.Background(), "远程接入怎么弄")
	if err != nil {
		t.Fatal(err)
	}
	if want := fakeVector("远程接入"); fmt.Sprint(v) != fmt.Sprint(want) {
		t.Errorf("vector %v, want %v", v, want)
	}
	if memory.NewEmbedder(config.MemoryEmbeddings{}) != nil {
		t.Error("an embedder without a name")
	}
}

// An answer that is no usable vector is an error, wrapped memory: embed:.
func TestEmbedderRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	vector := func(n int, x string) string {
		return `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[` +
			strings.TrimSuffix(strings.Repeat(x+",", n), ",") + `]}],"model":"bge-m3","usage":{"prompt_tokens":1,"total_tokens":1}}`
	}
	for name, tc := range map[string]struct {
		body string
		want error  // nil: any error
		says string // in the error's text
	}{
		"TooManyDims": {vector(memory.MaxDims+1, "0.5"), memory.ErrBadEmbedding, "8193 dimensions"},
		"NoDims":      {vector(0, ""), memory.ErrBadEmbedding, "0 dimensions"},
		"Zero":        {vector(8, "0"), nil, "zero vector"},
		"Overflow":    {vector(4, "1e39"), nil, "1e39"}, // beyond float32: a decoding error
		"NaN":         {vector(4, "NaN"), nil, "invalid character"},
		"NoData":      {`{"object":"list","data":[],"model":"bge-m3"}`, nil, "no single vector"},
		"TwoVectors": {`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]},` +
			`{"object":"embedding","index":1,"embedding":[1]}],"model":"bge-m3"}`, nil, "no single vector"},
		"Endless": {`{"object":"list",` + strings.Repeat(" ", 2<<20) + `"data":[]}`, nil, "over 1048576 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEmbeddings(t)
			f.answer = func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.body) }
			v, err := memory.NewEmbedder(f.endpoint(5*time.Second)).Embed(context.Background(), "VPN")
			if err == nil || !strings.HasPrefix(err.Error(), "memory: embed: ") {
				t.Fatalf("vector of %d, err %v; want an error wrapped memory: embed:", len(v), err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestEmbedderTimesOut(t *testing.T) {
	t.Parallel()
	f := newFakeEmbeddings(t)
	f.answer = func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	start := time.Now()
	_, err := memory.NewEmbedder(f.endpoint(200*time.Millisecond)).Embed(context.Background(), "VPN")
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s; want a timeout after 200ms", err, time.Since(start))
	}
}
