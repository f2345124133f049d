package config

import (
	"cmp"
	"time"
)

// MediaConfig bounds what Hermes does with the attachments employees send
// (media:): screenshots, files, voice. Every byte of them is hostile.
type MediaConfig struct {
	// MaxBytes is the largest attachment fetched, checked while reading
	// (the platform's size claim is not trusted). Default 20 MB.
	MaxBytes int64 `yaml:"max_bytes"`
	// Retention is how long fetched bytes stay in Postgres; a periodic job
	// (once across replicas) purges older ones. Default 7 days (168h).
	Retention time.Duration `yaml:"retention"`
	// MaxImagePixels caps an image's decoded size (width × height, read
	// from its header before any decoding): a decompression bomb is
	// refused. Default 40,000,000 (a 8000 × 5000 screenshot).
	MaxImagePixels int `yaml:"max_image_pixels"`
	// DocumentChars is how much of a document's text the model sees, in
	// characters; the rest is cut with a marker. Default 20,000 (about
	// 13,000 tokens of Chinese; keep it within model.context).
	DocumentChars int `yaml:"document_chars"`
	// MaxUncompressed and MaxEntries cap a DOCX or XLSX (zip bombs).
	// Defaults 50 MB and 2,000. Beyond them each DOCX or XLSX has a fixed
	// markup budget (gateway/media/document, markup.go): markup without
	// text is refused (messages.media.too_complex).
	MaxUncompressed int64 `yaml:"max_uncompressed"`
	MaxEntries      int   `yaml:"max_entries"`
	// ParseTimeout bounds the reading of one document. Default 10s.
	ParseTimeout time.Duration `yaml:"parse_timeout"`
	// MaxAttachments is the most attachments one message may carry; a
	// message with more is answered with messages.media.too_many and none
	// is fetched. Default 10.
	MaxAttachments int `yaml:"max_attachments"`
	// AttachmentsPerMinute is the most attachments one sender (a user of
	// one account of one channel) may send in any minute, counted in
	// Postgres and so shared by every replica. A message that would go
	// over is answered with messages.media.too_fast before any of its
	// attachments is downloaded or read, and none of its bytes is stored.
	// Default 20; at least max_attachments.
	AttachmentsPerMinute int `yaml:"attachments_per_minute"`
	// Describe is a vision model that turns each image into text for a
	// model that cannot see (model.vision false). Off without a name.
	Describe DescribeConfig `yaml:"describe"`
	// Transcribe is an OpenAI-compatible transcription endpoint
	// (POST /audio/transcriptions) for voice the platform sends without a
	// transcript. Off without a name.
	Transcribe TranscribeConfig `yaml:"transcribe"`
	// FileURLTTL is how long the URL of a file handed to a skill that
	// takes files (files: true) works. Default 10m.
	FileURLTTL time.Duration `yaml:"file_url_ttl"`
}

// MediaModel is an OpenAI-compatible endpoint used for attachments. Its
// base_url and api_key default to the model section's, for providers that
// serve both (DashScope, a local vLLM).
type MediaModel struct {
	BaseURL string        `yaml:"base_url"`
	APIKey  string        `yaml:"api_key"` // use ${ENV}
	Name    string        `yaml:"name"`    // e.g. qwen-vl-plus, whisper-1; empty: off
	Timeout time.Duration `yaml:"timeout"` // per call, default 60s
}

// On reports whether the endpoint is configured.
func (m MediaModel) On() bool { return m.Name != "" }

// DescribeConfig is media.describe.
type DescribeConfig struct {
	MediaModel `yaml:",inline"`
	// Prompt asks for the description; default DefaultDescribePrompt.
	Prompt string `yaml:"prompt"`
}

// TranscribeConfig is media.transcribe.
type TranscribeConfig struct {
	MediaModel `yaml:",inline"`
	// Language is the ISO-639-1 code sent with each request, default "zh".
	Language string `yaml:"language"`
}

// DefaultDescribePrompt asks a vision model for what an assistant needs
// to answer about a screenshot or a photo of a form.
const DefaultDescribePrompt = "请详细描述这张图片的内容，供另一个看不到图片的助手回答用户的问题：" +
	"逐字写出图中所有文字（报错信息、表格、表单字段及其填写内容），再简要说明画面内容。只输出描述。"

// Media defaults.
const (
	defaultMediaMaxBytes        = 20 << 20
	defaultMediaRetention       = 7 * 24 * time.Hour
	defaultMaxImagePixels       = 40_000_000
	defaultDocumentChars        = 20_000
	defaultMediaMaxUncompressed = 50 << 20
	defaultMediaMaxEntries      = 2000
	defaultMediaParseTimeout    = 10 * time.Second
	defaultMaxAttachments       = 10
	defaultAttachmentsPerMinute = 20
	defaultMediaModelTimeout    = 60 * time.Second
	defaultFileURLTTL           = 10 * time.Minute
)

func (m *MediaConfig) applyDefaults() {
	positive64(&m.MaxBytes, defaultMediaMaxBytes)
	positive(&m.Retention, defaultMediaRetention)
	positive(&m.MaxImagePixels, defaultMaxImagePixels)
	positive(&m.DocumentChars, defaultDocumentChars)
	positive64(&m.MaxUncompressed, defaultMediaMaxUncompressed)
	positive(&m.MaxEntries, defaultMediaMaxEntries)
	positive(&m.ParseTimeout, defaultMediaParseTimeout)
	positive(&m.MaxAttachments, defaultMaxAttachments)
	positive(&m.AttachmentsPerMinute, defaultAttachmentsPerMinute)
	positive(&m.FileURLTTL, defaultFileURLTTL)
	positive(&m.Describe.Timeout, defaultMediaModelTimeout)
	positive(&m.Transcribe.Timeout, defaultMediaModelTimeout)
	setDefault(&m.Describe.Prompt, DefaultDescribePrompt)
	setDefault(&m.Transcribe.Language, "zh")
}

// inherit fills an endpoint's base_url and api_key from the model's.
func (m *MediaModel) inherit(model ModelConfig) {
	if m.On() && m.BaseURL == "" {
		m.BaseURL, m.APIKey = model.BaseURL, cmp.Or(m.APIKey, model.APIKey)
	}
}

// validate checks the media endpoints and limits, naming their keys.
func (m *MediaConfig) validate(bad func(key, format string, args ...any)) {
	if m.AttachmentsPerMinute < m.MaxAttachments {
		// A message within max_attachments could never be admitted.
		bad("media.attachments_per_minute", "must be at least media.max_attachments (%d), got %d", m.MaxAttachments, m.AttachmentsPerMinute)
	}
	for _, e := range []struct {
		key string
		ep  MediaModel
	}{{"media.describe", m.Describe.MediaModel}, {"media.transcribe", m.Transcribe.MediaModel}} {
		key, ep := e.key, e.ep
		switch {
		case !ep.On() && ep.BaseURL != "":
			bad(key+".name", "required with %s.base_url", key)
		case ep.On() && ep.BaseURL == "":
			bad(key+".base_url", "required (model.base_url is empty too)")
		case ep.On() && !isHTTPURL(ep.BaseURL):
			bad(key+".base_url", "must be an http(s) URL, got %q", ep.BaseURL)
		}
	}
}

func positive64(p *int64, def int64) {
	if *p <= 0 {
		*p = def
	}
}

// MediaMessages are what the user is told when an attachment cannot be
// used (messages.media).
type MediaMessages struct {
	FetchFailed string `yaml:"fetch_failed"` // expired or refused by the platform: send it again
	TooLarge    string `yaml:"too_large"`    // over media.max_bytes; %s is the limit in MB
	TooMany     string `yaml:"too_many"`     // more than media.max_attachments in one message
	NeedsVision string `yaml:"needs_vision"` // an image, and the model cannot see images
	BadImage    string `yaml:"bad_image"`    // not an image we can read, or over media.max_image_pixels
	FileType    string `yaml:"file_type"`    // a file of a type Hermes does not read
	Scanned     string `yaml:"scanned"`      // a PDF without text (a scan)
	BadFile     string `yaml:"bad_file"`     // a document that cannot be read (corrupt, encrypted, too slow)
	// TooComplex: a DOCX or XLSX over the zip caps (media.max_entries,
	// media.max_uncompressed) or whose markup spends its budget before
	// any text.
	TooComplex string `yaml:"too_complex"`
	// TooFast: the sender is over media.attachments_per_minute; nothing
	// of the message was downloaded.
	TooFast      string `yaml:"too_fast"`
	NoTranscript string `yaml:"no_transcript"` // a voice message without the platform's transcript, and no media.transcribe
	// Undecryptable: the bytes did not decrypt (an account's key that is
	// wrong): sending again cannot help, the administrator was told (logged).
	Undecryptable string `yaml:"undecryptable"`
	// NotItsType: a file named as a PDF, DOCX or XLSX whose bytes are not
	// one; %s its name, %s the type its name says, %s that type again.
	NotItsType string `yaml:"not_its_type"`
	// DescribeFailed and TranscribeFailed: media.describe or
	// media.transcribe did not answer (after its timeout) or refused.
	DescribeFailed   string `yaml:"describe_failed"`
	TranscribeFailed string `yaml:"transcribe_failed"`
	// Described follows an image's marker with what media.describe saw;
	// %s is the description.
	Described string `yaml:"described"`
	Video     string `yaml:"video"`  // a video
	Image     string `yaml:"image"`  // stands for an image in the text the model and history see; %d its number
	File      string `yaml:"file"`   // precedes a document's text; %s is its name
	Quoted    string `yaml:"quoted"` // precedes a quoted message; %s is its sender
	// QuotedUnknown precedes a quoted message whose sender the platform
	// does not name (the WeCom AI bot).
	QuotedUnknown string `yaml:"quoted_unknown"`
}

// DefaultMediaMessages are the Chinese defaults of MediaMessages.
var DefaultMediaMessages = MediaMessages{
	FetchFailed:      "没能取到你发的附件（链接可能已过期），请重新发送一次。",
	TooLarge:         "文件太大了，我能处理的上限是 %s MB，请压缩后再发，或者用文字说明。",
	Undecryptable:    "这个附件我没能读取（解密失败，重发也无济于事），已通知管理员处理。请先用文字描述你的问题。",
	NotItsType:       "%s 的内容不是 %s（可能已损坏或扩展名不对），请导出为 %s 后重发。",
	TooMany:          "一条消息里的图片和文件太多了，请分几条发送。",
	NeedsVision:      "我现在看不了图片，请用文字描述一下图片里的内容。",
	BadImage:         "这张图片我打不开（格式不支持或尺寸过大），请截一张普通的 PNG 或 JPG 再发。",
	FileType:         "这种文件我还读不了。目前支持图片、PDF、Word（DOCX）、Excel（XLSX）、CSV 和文本文件。",
	Scanned:          "这个 PDF 像是扫描件，里面没有可读取的文字，请发文字版，或把要点用文字发给我。",
	BadFile:          "这个文件打不开（可能已损坏、加密或过于复杂），请检查后重新发送。",
	TooComplex:       "这个文件内部结构过于庞大复杂，有效文字却很少，我没有读取。请另存为 PDF 或 CSV，或把要点用文字发给我。",
	TooFast:          "你这一分钟内发送的附件太多了，这条消息里的文件我没有接收。请等一分钟后再重新发送。",
	NoTranscript:     "我还听不了这条语音，请用文字再说一遍。",
	DescribeFailed:   "图片识别暂时不可用，请稍后再发一次，或用文字描述图片里的内容。",
	TranscribeFailed: "语音转文字暂时不可用，请稍后再发一次，或直接发文字。",
	Described:        "（图片内容，由图像识别模型描述：%s）",
	Video:            "我还看不了视频，请用文字描述你的问题。",
	Image:            "[图片%d]",
	File:             "[文件 %s]",
	Quoted:           "[引用 %s 的消息]",
	QuotedUnknown:    "[引用的消息]",
}
