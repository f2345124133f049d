package media

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders whose headers DecodeConfig reads
	_ "image/jpeg"
	_ "image/png"
	"math"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	_ "golang.org/x/image/webp"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/media/document"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Options are what Prepare may do with attachments.
type Options struct {
	Vision bool // the model sees images (model.vision)
	Limits config.MediaConfig
	Words  config.MediaMessages
	// Describer, when set, describes images as text for a model without
	// Vision (media.describe); Transcriber turns voice without the
	// platform's transcript into text (media.transcribe).
	Describer   Describer
	Transcriber Transcriber
}

// Input is what a message's parts became for the model.
type Input struct {
	// Text is the message's text with its attachments in place, for the
	// model: a marker for each image ([图片1]), a document's text after
	// its name.
	Text string
	// History is the same with a document's name only: what the
	// conversation keeps (and the console shows), never a file's content.
	History string
	Images  []agent.Image
	// Refusal, when set, is said to the user instead of a run: the first
	// attachment that cannot be used, and why, in words the user can act
	// on (nothing of the message is half-understood).
	Refusal string
	// Became says per part what it became, for the console.
	Became map[int]string
}

// imageTypes are the image formats a vision model takes (the OpenAI
// image input formats); the decoders above read their headers.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// Prepare turns a message's parts and their fetched bytes into the
// model's input. It reads only fetched, the rows of this very message:
// what the sender sent, never another user's file.
func Prepare(ctx context.Context, parts []channels.Part, fetched map[int]store.MediaRow, opt Options) Input {
	if TooMany(parts, opt.Limits.MaxAttachments) {
		return Input{Refusal: opt.Words.TooMany}
	}
	for i := range parts {
		if m, ok := fetched[i]; ok && m.Error == codeTooFast {
			// Refused whole before any download: one answer for it.
			return Input{Refusal: opt.Words.TooFast, Became: map[int]string{i: "拒绝：" + opt.Words.TooFast}}
		}
	}
	in := Input{Became: map[int]string{}}
	var text, history []string
	images := 0 // numbered in the message: [图片1], [图片2], seen or described
	for i, p := range parts {
		if p.Media == nil {
			text, history = append(text, p.Text), append(history, p.Text)
			continue
		}
		piece, became, refusal := prepareOne(ctx, p.Media, fetched[i], images+1, opt)
		if refusal != "" {
			return Input{Refusal: refusal, Became: map[int]string{i: "拒绝：" + refusal}}
		}
		if piece.image != nil {
			in.Images = append(in.Images, *piece.image)
		}
		if piece.numbered {
			images++
		}
		text, history = append(text, piece.text), append(history, cmp.Or(piece.history, piece.text))
		in.Became[i] = became
	}
	in.Text, in.History = strings.Join(text, "\n"), strings.Join(history, "\n")
	return in
}

// piece is what one attachment became: text for the model (history, when
// set, is what the conversation keeps instead), and an image.
type piece struct {
	text, history string
	image         *agent.Image
	numbered      bool // an image: the next one is the next number
}

// prepareOne turns one attachment (nth image if it is one) into model
// input, or the refusal to say.
func prepareOne(ctx context.Context, ref *channels.MediaRef, m store.MediaRow, nth int, opt Options) (piece, string, string) {
	w := opt.Words
	switch {
	case ref.Kind == channels.MediaVoice && ref.Transcript != "":
		return piece{text: ref.Transcript}, "语音 → 平台转写", ""
	case ref.Kind == channels.MediaVoice && opt.Transcriber == nil:
		return piece{}, "", w.NoTranscript
	case ref.Kind == channels.MediaVideo:
		return piece{}, "", w.Video
	}
	switch m.Error {
	case "":
		if m.Data == nil {
			return piece{}, "", w.FetchFailed // never fetched, or purged
		}
	case codeTooLarge:
		return piece{}, "", fmt.Sprintf(w.TooLarge, megabytes(opt.Limits.MaxBytes))
	case codeUndecryptable: // the account's key, not the file: sending again cannot help
		return piece{}, "", w.Undecryptable
	default:
		return piece{}, "", w.FetchFailed
	}
	switch {
	case ref.Kind == channels.MediaVoice:
		return transcribe(ctx, m, opt)
	case strings.HasPrefix(m.MIME, "image/") || ref.Kind == channels.MediaImage && !isDocument(m.MIME):
		return prepareImage(ctx, m, nth, opt)
	}
	return prepareDocument(ctx, m, opt)
}

// transcribe turns voice into its words by media.transcribe: they are the
// message, so the conversation keeps them too.
func transcribe(ctx context.Context, m store.MediaRow, opt Options) (piece, string, string) {
	text, err := opt.Transcriber.Transcribe(ctx, voiceFileName(m.Data, m.MIME), m.Data)
	if err != nil {
		return piece{}, "", opt.Words.TranscribeFailed
	}
	return piece{text: text}, fmt.Sprintf("语音 → 转写 %s 字", thousands(utf8.RuneCountInString(text))), ""
}

// isDocument reports whether a sniffed type is one of the documents
// (a platform may call a file of any kind an "image").
func isDocument(mime string) bool {
	return strings.HasPrefix(mime, "application/pdf") || strings.HasPrefix(mime, "application/zip") ||
		strings.HasPrefix(mime, "text/")
}

// prepareImage checks an image's type and size from its header (never
// decoding it: a decompression bomb costs nothing) and hands it to the
// model as a data URL.
func prepareImage(ctx context.Context, m store.MediaRow, nth int, opt Options) (piece, string, string) {
	w := opt.Words
	mime := strings.TrimSpace(strings.SplitN(m.MIME, ";", 2)[0])
	if !imageTypes[mime] {
		return piece{}, "", w.BadImage
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(m.Data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > int64(opt.Limits.MaxImagePixels) {
		return piece{}, "", w.BadImage
	}
	marker, size := fmt.Sprintf(w.Image, nth), fmt.Sprintf("图片 %d×%d", cfg.Width, cfg.Height)
	switch {
	case opt.Vision:
		return piece{text: marker, image: &agent.Image{URL: dataURL(mime, m.Data)}, numbered: true}, size + " → 模型", ""
	case opt.Describer == nil:
		return piece{}, "", w.NeedsVision
	}
	// The description is for this message only: the conversation keeps
	// the marker, as it keeps a document's name and not its text.
	desc, err := opt.Describer.Describe(ctx, dataURL(mime, m.Data))
	if err != nil {
		return piece{}, "", w.DescribeFailed
	}
	became := fmt.Sprintf("%s → 图像识别模型 %s 字", size, thousands(utf8.RuneCountInString(desc)))
	return piece{text: marker + "\n" + fmt.Sprintf(w.Described, desc), history: marker, numbered: true}, became, ""
}

// prepareDocument turns a document into text within the budget.
func prepareDocument(ctx context.Context, m store.MediaRow, opt Options) (piece, string, string) {
	w := opt.Words
	res, err := document.Extract(ctx, m.Data, m.Name, document.Limits{
		MaxChars: opt.Limits.DocumentChars, MaxUncompressed: opt.Limits.MaxUncompressed,
		MaxEntries: opt.Limits.MaxEntries, ParseTimeout: opt.Limits.ParseTimeout,
	})
	switch {
	case errors.Is(err, document.ErrUnsupported) && namedAs(m.Name) != "":
		return piece{}, "", fmt.Sprintf(w.NotItsType, m.Name, namedAs(m.Name), namedAs(m.Name))
	case errors.Is(err, document.ErrUnsupported):
		return piece{}, "", w.FileType
	case errors.Is(err, document.ErrScanned):
		return piece{}, "", w.Scanned
	case errors.Is(err, document.ErrBomb), errors.Is(err, document.ErrTooComplex):
		return piece{}, "", w.TooComplex
	case err != nil:
		return piece{}, "", w.BadFile
	}
	name := m.Name
	if name == "" {
		name = string(res.Kind)
	}
	head := fmt.Sprintf(w.File, markerSafe.Replace(name))
	return piece{text: head + "\n" + res.Text, history: head}, describe(res), ""
}

// namedAs is the document type a file's name says it is ("PDF" for
// 发票.pdf), "" for a name that names none Hermes reads by its bytes:
// such a file whose bytes are no such document is told so, not given the
// list of the types Hermes reads (which names the one it claims to be).
func namedAs(name string) string {
	switch k := document.Kind(strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))); k {
	case document.PDF, document.DOCX, document.XLSX:
		return strings.ToUpper(string(k))
	}
	return ""
}

// megabytes is a media.max_bytes in MB as a user reads it: "20", "0.5".
func megabytes(n int64) string {
	return strconv.FormatFloat(math.Round(float64(n)/(1<<20)*10)/10, 'f', -1, 64)
}

// markerSafe keeps a file name inside its marker ([文件 …]): its own
// brackets become full-width ones, so "a.pdf] [系统 …" cannot close the
// marker and write a line that looks like Hermes's own.
// (channels.CleanFileName took out newlines and control characters.)
var markerSafe = strings.NewReplacer("[", "［", "]", "］")

// describe says what a document became, for the console:
// "PDF 3 页 → 4,120 字".
func describe(r document.Result) string {
	var what string
	switch r.Kind {
	case document.PDF:
		what = fmt.Sprintf("PDF %d 页", r.Pages)
	case document.XLSX:
		what = fmt.Sprintf("Excel %d 个工作表", r.Sheets)
	case document.DOCX:
		what = "Word"
	default:
		what = strings.ToUpper(string(r.Kind))
	}
	out := fmt.Sprintf("%s → %s 字", what, thousands(r.Chars))
	if r.Truncated {
		out += "（已截断）"
	}
	return out
}

// thousands writes n with thousands separators: 4120 → "4,120".
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// dataURL is data as a data: URL, written once into a buffer of its final
// size (a 20 MB image must not cost twice its base64 in copies).
func dataURL(mime string, data []byte) string {
	prefix := "data:" + mime + ";base64,"
	var b strings.Builder
	b.Grow(len(prefix) + base64.StdEncoding.EncodedLen(len(data)))
	b.WriteString(prefix)
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = enc.Write(data) // a strings.Builder does not fail
	_ = enc.Close()
	return b.String()
}

// TooMany reports whether parts carry more than max attachments: such a
// message is refused whole, and none of them is fetched.
func TooMany(parts []channels.Part, max int) bool {
	n := 0
	for _, p := range parts {
		if p.Media != nil {
			n++
		}
	}
	return n > max
}
