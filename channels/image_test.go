package channels

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"testing"
)

func TestImageFileName(t *testing.T) {
	for name, want := range map[string]string{
		"tickets.png": "tickets.png", "reports/工单.png": "工单.png", `C:\tmp\a.png`: "a.png", "": "image.png", "/": "image.png",
	} {
		if got := (&Image{Name: name}).FileName(); got != want {
			t.Errorf("FileName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCheckImage(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), 1, 2, 3)
	if err := CheckImage(&Image{PNG: png}, len(png)); err != nil {
		t.Fatalf("a PNG at the limit: %v", err)
	}
	for name, img := range map[string]*Image{
		"Nil": nil, "Empty": {}, "NotPNG": {PNG: []byte("GIF89a...")}, "Oversize": {PNG: append(png, 0)},
	} {
		if err := CheckImage(img, len(png)); !errors.Is(err, ErrPermanent) {
			t.Errorf("%s: err = %v, want ErrPermanent", name, err)
		}
	}
}

func TestImageForm(t *testing.T) {
	img := &Image{Name: "图表.png", PNG: []byte("\x89PNG\r\n\x1a\nDATA")}
	f, err := ImageForm([][2]string{{"type", "image"}}, "media", img)
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(f.ContentType)
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(bytes.NewReader(f.Body), params["boundary"])
	field, err := r.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := io.ReadAll(field); field.FormName() != "type" || string(v) != "image" {
		t.Fatalf("first part %s=%q", field.FormName(), v)
	}
	file, err := r.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(file)
	if file.FormName() != "media" || file.FileName() != "图表.png" || file.Header.Get("Content-Type") != "image/png" || !bytes.Equal(data, img.PNG) {
		t.Fatalf("file part %s %q %s %q", file.FormName(), file.FileName(), file.Header.Get("Content-Type"), data)
	}
}
