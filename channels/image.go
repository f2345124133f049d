package channels

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"path"
	"strings"
)

// pngSignature starts every PNG file.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// CheckImage checks an image part before it is uploaded: present, a PNG
// (what reports render; every platform takes PNG), and at most maxBytes,
// the platform's limit. Errors wrap ErrPermanent: the same image fails the
// same way on every attempt.
func CheckImage(img *Image, maxBytes int) error {
	switch {
	case img == nil || len(img.PNG) == 0:
		return fmt.Errorf("image part without an image: %w", ErrPermanent)
	case !bytes.HasPrefix(img.PNG, pngSignature):
		return fmt.Errorf("image %q is not a PNG: %w", img.Name, ErrPermanent)
	case len(img.PNG) > maxBytes:
		return fmt.Errorf("image %q of %d bytes exceeds the platform's %d: %w", img.Name, len(img.PNG), maxBytes, ErrPermanent)
	}
	return nil
}

// FileName is the image's file name as a platform shows it: img.Name
// without directories, "image.png" when empty.
func (img *Image) FileName() string {
	name := path.Base(strings.ReplaceAll(img.Name, "\\", "/"))
	if name == "" || name == "." || name == "/" {
		return "image.png"
	}
	return name
}

// Form is a request body a platform client sends as is, not as JSON: a
// multipart upload.
type Form struct {
	ContentType string // with the multipart boundary
	Body        []byte
}

// ImageForm builds a multipart/form-data body, the way media upload APIs
// take files: the plain fields in order, then img as file under fileField
// with Content-Type image/png.
func ImageForm(fields [][2]string, fileField string, img *Image) (Form, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return Form{}, fmt.Errorf("multipart field %s: %w", f[0], err)
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q; filelength=%d`,
		fileField, img.FileName(), len(img.PNG)))
	h.Set("Content-Type", "image/png")
	part, err := w.CreatePart(h)
	if err != nil {
		return Form{}, fmt.Errorf("multipart file %s: %w", fileField, err)
	}
	if _, err := part.Write(img.PNG); err != nil {
		return Form{}, fmt.Errorf("multipart file %s: %w", fileField, err)
	}
	if err := w.Close(); err != nil {
		return Form{}, fmt.Errorf("multipart: %w", err)
	}
	return Form{ContentType: w.FormDataContentType(), Body: buf.Bytes()}, nil
}
