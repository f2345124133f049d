package document

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated is the heap allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestZipBombLyingSize(t *testing.T) {
	bomb := bombZip(t, 1000, 200<<20) // declares 1 KB, inflates to 200 MB
	var err error
	start := time.Now()
	alloc := allocated(func() { _, err = extract(t, bomb, "", Limits{}) })
	wantErr(t, err, ErrBomb)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
	if alloc > 8<<20 {
		t.Errorf("allocated %d MB", alloc>>20)
	}
}

func TestZipBombEntries(t *testing.T) {
	entries := []zipEntry{{"[Content_Types].xml", contentTypes}, {"word/document.xml", "<w:document/>"}}
	for i := range 5000 {
		entries = append(entries, zipEntry{fmt.Sprintf("word/media/%d.txt", i), ""})
	}
	data := zipOf(t, entries...)
	var err error
	start := time.Now()
	alloc := allocated(func() { _, err = extract(t, data, "", Limits{}) })
	wantErr(t, err, ErrBomb)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
	// The central directory is read (about 1 KB per entry); nothing is
	// inflated.
	if alloc > uint64(len(data))*20 {
		t.Errorf("allocated %d KB for a %d KB zip", alloc>>10, len(data)>>10)
	}
}

func TestZipBombDeclaredTotal(t *testing.T) {
	data := docxOf(t, strings.Repeat(`<w:p><w:r><w:t>text</w:t></w:r></w:p>`, 100))
	_, err := extract(t, data, "", Limits{MaxUncompressed: 1000})
	wantErr(t, err, ErrBomb)
}

func TestZipErrCorrupt(t *testing.T) {
	docx, xlsx := sampleDOCX(t), sampleXLSX(t)
	t.Run("Truncated", func(t *testing.T) {
		for _, data := range [][]byte{docx, xlsx} {
			// From the second entry's name on, the bytes still say
			// which kind they are.
			h := bytes.Index(data[30:], []byte("PK\x03\x04")) + 30
			first := h + 30 + int(binary.LittleEndian.Uint16(data[h+26:]))
			for n := first; n < len(data); n += 23 {
				_, err := extract(t, data[:n], "", Limits{})
				wantErr(t, err, ErrCorrupt)
			}
		}
	})
	t.Run("BadXML", func(t *testing.T) {
		_, err := extract(t, docxOf(t, `<w:p><w:r><w:t>open`), "", Limits{})
		wantErr(t, err, ErrCorrupt)
	})
	t.Run("Checksum", func(t *testing.T) {
		var b bytes.Buffer
		w := zip.NewWriter(&b)
		for _, e := range []zipEntry{{"[Content_Types].xml", contentTypes}, {"word/document.xml", "<w:document><w:p><w:r><w:t>MARKER</w:t></w:r></w:p></w:document>"}} {
			f, _ := w.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
			f.Write([]byte(e.body))
		}
		w.Close()
		data := bytes.Replace(b.Bytes(), []byte("MARKER"), []byte("MARKEX"), 1)
		_, err := extract(t, data, "", Limits{})
		wantErr(t, err, ErrCorrupt)
	})
	t.Run("BrokenWorkbook", func(t *testing.T) {
		data := zipOf(t, zipEntry{"[Content_Types].xml", contentTypes}, zipEntry{"xl/workbook.xml", "<workbook><sheets><sheet name="})
		_, err := extract(t, data, "", Limits{})
		wantErr(t, err, ErrCorrupt)
	})
}
