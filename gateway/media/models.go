package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
)

// Describer turns an image into text for a model that cannot see
// (media.describe).
type Describer interface {
	// Describe returns what the image at dataURL (a data: URL) shows.
	Describe(ctx context.Context, dataURL string) (string, error)
}

// Transcriber turns voice into text (media.transcribe).
type Transcriber interface {
	// Transcribe returns what is said in audio; fileName's extension
	// tells the endpoint its format.
	Transcribe(ctx context.Context, fileName string, audio []byte) (string, error)
}

// What a describer or transcriber answers is cut to these many bytes: it
// enters the prompt, and an endpoint is not trusted to be brief.
const (
	maxDescriptionBytes = 8 << 10
	maxTranscriptBytes  = 8 << 10
)

// describeMaxTokens bounds the description a vision model writes.
const describeMaxTokens = 1500

// errEmptyAnswer is an endpoint that answered with no text.
var errEmptyAnswer = errors.New("media: the endpoint answered no text")

// NewDescriber is media.describe's endpoint, nil when it is off.
func NewDescriber(cfg config.DescribeConfig) Describer {
	if !cfg.On() {
		return nil
	}
	return &openAIDescriber{client: newClient(cfg.MediaModel), model: cfg.Name, prompt: cfg.Prompt}
}

// NewTranscriber is media.transcribe's endpoint, nil when it is off.
func NewTranscriber(cfg config.TranscribeConfig) Transcriber {
	if !cfg.On() {
		return nil
	}
	return &openAITranscriber{client: newClient(cfg.MediaModel), model: cfg.Name, language: cfg.Language}
}

func newClient(m config.MediaModel) *openai.Client {
	oc := openai.DefaultConfig(m.APIKey)
	oc.BaseURL = m.BaseURL
	oc.HTTPClient = &http.Client{Timeout: m.Timeout}
	return openai.NewClientWithConfig(oc)
}

type openAIDescriber struct {
	client        *openai.Client
	model, prompt string
}

// Describe asks the vision model in one chat completion: the prompt and
// the image, nothing of the conversation (the describer sees the image,
// not who sent it or why).
func (d *openAIDescriber) Describe(ctx context.Context, dataURL string) (string, error) {
	resp, err := d.client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: d.model, MaxTokens: describeMaxTokens,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: d.prompt},
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: dataURL, Detail: openai.ImageURLDetailHigh}},
		}}},
	})
	if err != nil {
		return "", fmt.Errorf("media: describe: %w", err)
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("media: describe: %w", errEmptyAnswer)
	}
	return bounded(resp.Choices[0].Message.Content, maxDescriptionBytes)
}

type openAITranscriber struct {
	client          *openai.Client
	model, language string
}

func (t *openAITranscriber) Transcribe(ctx context.Context, fileName string, audio []byte) (string, error) {
	resp, err := t.client.CreateTranscription(ctx, openai.AudioRequest{
		Model: t.model, FilePath: fileName, Reader: bytes.NewReader(audio), Language: t.language,
		Format: openai.AudioResponseFormatJSON,
	})
	if err != nil {
		return "", fmt.Errorf("media: transcribe: %w", err)
	}
	return bounded(resp.Text, maxTranscriptBytes)
}

// bounded is an endpoint's text, trimmed and cut to max bytes; none is an
// error.
func bounded(text string, max int) (string, error) {
	text = strings.TrimSpace(channels.TruncateUTF8(text, max))
	if text == "" {
		return "", errEmptyAnswer
	}
	return text, nil
}

// voiceFileName names voice bytes by their format, sniffed from the
// bytes: transcription endpoints choose the decoder by the extension.
// WeCom sends AMR, Feishu and DingTalk Opus in Ogg.
func voiceFileName(audio []byte, mime string) string {
	switch {
	case bytes.HasPrefix(audio, []byte("#!AMR-WB\n")):
		return "voice.awb"
	case bytes.HasPrefix(audio, []byte("#!AMR\n")):
		return "voice.amr"
	case bytes.HasPrefix(audio, []byte("#!SILK")), bytes.HasPrefix(audio, []byte("\x02#!SILK")):
		return "voice.silk"
	case strings.HasPrefix(mime, "application/ogg"), strings.HasPrefix(mime, "audio/ogg"):
		return "voice.ogg"
	case strings.HasPrefix(mime, "audio/mpeg"):
		return "voice.mp3"
	case strings.HasPrefix(mime, "audio/wave"), strings.HasPrefix(mime, "audio/wav"):
		return "voice.wav"
	case strings.HasPrefix(mime, "audio/mp4"), strings.HasPrefix(mime, "video/mp4"):
		return "voice.m4a"
	}
	return "voice.ogg"
}
