package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
)

// Embedder turns a text into its vector (memory.embeddings). Every vector
// of a deployment must come from the same model: RecallWith compares a
// query's with the stored ones.
type Embedder interface {
	// Embed returns text's vector: 1 to MaxDims finite numbers, not all
	// zero.
	Embed(ctx context.Context, text string) ([]float32, error)
}

// Bounds of one embeddings call. A memory is at most MaxTextBytes, but a
// query is what the user wrote: it is read as far as Terms reads it. The
// answer is read up to maxEmbedAnswer bytes: MaxDims numbers in JSON are
// about 160 KB, and an endpoint is not trusted to stop.
const (
	maxEmbedInput  = maxTermsInput
	maxEmbedAnswer = 1 << 20
)

// Errors of an answer that is no usable vector.
var (
	errEmbedAnswer  = errors.New("the endpoint answered no single vector")
	errEmbedZero    = errors.New("the endpoint answered a zero vector")
	errEmbedTooLong = fmt.Errorf("the endpoint's answer is over %d bytes", maxEmbedAnswer)
)

// NewEmbedder is memory.embeddings' endpoint (its base_url and api_key
// resolved: config.MemoryConfig.EmbeddingsEndpoint), nil when it is off.
func NewEmbedder(cfg config.MemoryEmbeddings) Embedder {
	if !cfg.On() {
		return nil
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = limitedDoer{&http.Client{Timeout: cfg.Timeout}}
	return &openAIEmbedder{client: openai.NewClientWithConfig(oc), model: cfg.Name, timeout: cfg.Timeout}
}

// openAIEmbedder calls POST {base_url}/embeddings, one text a call.
type openAIEmbedder struct {
	client  *openai.Client
	model   string
	timeout time.Duration
}

func (e *openAIEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
		Input: []string{channels.TruncateUTF8(text, maxEmbedInput)},
		Model: openai.EmbeddingModel(e.model),
	})
	if err != nil {
		return nil, fmt.Errorf("memory: embed: %w", err)
	}
	if len(resp.Data) != 1 {
		return nil, fmt.Errorf("memory: embed: %w (%d)", errEmbedAnswer, len(resp.Data))
	}
	v := resp.Data[0].Embedding
	switch {
	case !validVector(v):
		return nil, fmt.Errorf("memory: embed: %w: %d dimensions", ErrBadEmbedding, len(v))
	case length(v) == 0:
		return nil, fmt.Errorf("memory: embed: %w", errEmbedZero)
	}
	return v, nil
}

// limitedDoer cuts every answer's body at maxEmbedAnswer bytes: reading
// past them is an error, not a longer wait for more.
type limitedDoer struct{ c *http.Client }

func (d limitedDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxEmbedAnswer}
	}
	return resp, err
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	// One byte more than allowed is read, so that a body of exactly the
	// limit ends with the endpoint's EOF and a longer one with the error.
	if b.left < 0 {
		return 0, errEmbedTooLong
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errEmbedTooLong
	}
	return n, err
}
