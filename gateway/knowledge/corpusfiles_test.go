package knowledge_test

// The benchmark corpus keeps its PDF, DOCX and XLSX documents as text
// (testdata/bench/docs/*.pdf.txt, .docx.txt, .xlsx.csv), readable and
// diffable; these builders write the real files from them, as an office
// suite would, so that they go through media's extraction like any upload.

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"fmt"
	"html"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/hermes-gw/hermes/gateway/media/mediatest"
)

// pdfPageBreak separates the pages of a .pdf.txt source.
const pdfPageBreak = "==page=="

// cjkPDF is a PDF of pages of lines in a Type0 font (Identity-H): every
// character is its UTF-16 code, mapped back to Unicode by a ToUnicode
// CMap, as Chinese PDFs written by office suites are.
func cjkPDF(pages [][]string) []byte {
	var objs []string
	add := func(body string) int { objs = append(objs, body); return len(objs) }
	catalog, pagesObj := add(""), add("")
	const cmap = "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CMapName /Bench-UCS def\n" +
		"1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n1 beginbfrange\n<0000> <FFFF> <0000>\nendbfrange\n" +
		"endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend"
	tu := add(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(cmap), cmap))
	font := add(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /SimSun /Encoding /Identity-H "+
		"/DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /SimSun /DW 1000 >>] /ToUnicode %d 0 R >>", tu))
	var kids []string
	for _, lines := range pages {
		var c strings.Builder
		c.WriteString("BT /F1 11 Tf 16 TL 56 780 Td\n")
		for _, l := range lines {
			c.WriteString("<")
			for _, u := range utf16.Encode([]rune(l)) {
				fmt.Fprintf(&c, "%04X", u)
			}
			c.WriteString("> Tj T*\n")
		}
		c.WriteString("ET")
		content := add(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", c.Len(), c.String()))
		page := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Contents %d 0 R >>", pagesObj, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesObj)
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 %d 0 R >> >> >>",
		strings.Join(kids, " "), len(kids), font)
	return mediatest.PDFOf(objs)
}

// pdfOf is the PDF of a .pdf.txt source: its pages split at pdfPageBreak.
func pdfOf(src string) []byte {
	var pages [][]string
	for _, page := range strings.Split(src, pdfPageBreak) {
		pages = append(pages, strings.Split(strings.TrimSpace(page), "\n"))
	}
	return cjkPDF(pages)
}

const (
	contentTypesXML = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
		`<Default Extension="xml" ContentType="application/xml"/></Types>`
	wordNS  = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	sheetNS = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
)

// docxOf is the DOCX of a .docx.txt source: a paragraph a line, and runs
// of lines with tabs a table whose cells the tabs separate.
func docxOf(t testing.TB, src string) []byte {
	var body strings.Builder
	inTable := false
	for _, line := range strings.Split(strings.TrimSpace(src), "\n") {
		cells := strings.Split(line, "\t")
		if len(cells) > 1 != inTable {
			if inTable {
				body.WriteString("</w:tbl>")
			} else {
				body.WriteString("<w:tbl>")
			}
			inTable = !inTable
		}
		if !inTable {
			body.WriteString(`<w:p><w:r><w:t xml:space="preserve">` + html.EscapeString(line) + `</w:t></w:r></w:p>`)
			continue
		}
		body.WriteString("<w:tr>")
		for _, c := range cells {
			body.WriteString(`<w:tc><w:p><w:r><w:t>` + html.EscapeString(c) + `</w:t></w:r></w:p></w:tc>`)
		}
		body.WriteString("</w:tr>")
	}
	if inTable {
		body.WriteString("</w:tbl>")
	}
	return zipFiles(t, map[string]string{
		"[Content_Types].xml": contentTypesXML,
		"word/document.xml":   `<?xml version="1.0" encoding="UTF-8"?><w:document ` + wordNS + `><w:body>` + body.String() + `</w:body></w:document>`,
	})
}

// xlsxOf is a workbook of one sheet, named sheet, holding the rows of a
// CSV source as inline strings.
func xlsxOf(t testing.TB, sheet, src string) []byte {
	rows, err := csv.NewReader(strings.NewReader(src)).ReadAll()
	if err != nil {
		t.Fatalf("xlsx source: %v", err)
	}
	var data strings.Builder
	for i, row := range rows {
		fmt.Fprintf(&data, `<row r="%d">`, i+1)
		for j, v := range row {
			fmt.Fprintf(&data, `<c r="%c%d" t="inlineStr"><is><t>%s</t></is></c>`, 'A'+j, i+1, html.EscapeString(v))
		}
		data.WriteString("</row>")
	}
	return zipFiles(t, map[string]string{
		"[Content_Types].xml": contentTypesXML,
		"xl/workbook.xml": `<?xml version="1.0"?><workbook ` + sheetNS + `><sheets><sheet name="` + html.EscapeString(sheet) +
			`" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
		"xl/worksheets/sheet1.xml": `<?xml version="1.0"?><worksheet ` + sheetNS + `><sheetData>` + data.String() + `</sheetData></worksheet>`,
	})
}

func zipFiles(t testing.TB, files map[string]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml"} {
		body, ok := files[name]
		if !ok {
			continue
		}
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
