package document

// Fixtures are built here, in Go, so each test shows what its file holds:
// PDFs written object by object with their cross-reference offsets
// counted, Office files zipped with archive/zip.

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

// pdfDoc writes a PDF with a classic xref table; objects are numbered
// from 1 in the order added.
type pdfDoc struct{ objs []string }

func (d *pdfDoc) add(body string) int {
	d.objs = append(d.objs, body)
	return len(d.objs)
}

func (d *pdfDoc) set(id int, body string) { d.objs[id-1] = body }

func (d *pdfDoc) bytes(root int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xE2\xE3\xCF\xD3\n")
	offs := make([]int, len(d.objs))
	for i, o := range d.objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(d.objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(d.objs)+1, root, xref)
	return bytes.Clone(b.Bytes()) // not the buffer's spare capacity
}

func streamObj(dict, data string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

func flateObj(dict, data string) string {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	io.WriteString(w, data)
	w.Close()
	return streamObj(dict+" /Filter /FlateDecode", b.String())
}

// pdfPages writes a PDF whose pages have the given content streams and
// share resources (fonts F1: Helvetica, F2: a CID font with a ToUnicode
// map for 中文测试, and image Im0).
func pdfPages(contents ...string) []byte {
	d := &pdfDoc{}
	catalog, pages := d.add(""), d.add("")
	helv := d.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	tu := d.add(flateObj("", cjkCMap))
	cid := d.add(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /SimSun /Encoding /Identity-H "+
		"/DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /SimSun /DW 1000 >>] /ToUnicode %d 0 R >>", tu))
	img := d.add(streamObj("/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8", "\xff"))
	var kids []string
	for _, c := range contents {
		content := d.add(flateObj("", c))
		page := d.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", pages, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	d.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	d.set(pages, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> /XObject << /Im0 %d 0 R >> >> >>",
		strings.Join(kids, " "), len(kids), helv, cid, img))
	return d.bytes(catalog)
}

// cjkCMap maps the two-byte codes 0001–0004 to 中文测试, two ways, and
// 1000–1FFF to U+4E00 on (a range too large to expand).
const cjkCMap = `/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CMapName /Test-UCS def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
2 beginbfchar
<0001> <4E2D>
<0002> <6587>
endbfchar
2 beginbfrange
<0003> <0004> [<6D4B> <8BD5>]
<1000> <1FFF> <4E00>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end`

// linesContent shows each line with Helvetica, one line under the other.
func linesContent(lines ...string) string {
	var b strings.Builder
	b.WriteString("BT /F1 12 Tf 14 TL 72 720 Td\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "(%s) Tj T*\n", pdfEscape(l))
	}
	b.WriteString("ET\n")
	return b.String()
}

func pdfEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`).Replace(s)
}

// twoPagePDF is the basic fixture: two pages of text.
func twoPagePDF() []byte {
	return pdfPages(
		linesContent("Quarterly report", "Revenue grew (a lot)."),
		linesContent("Second page", "The end."),
	)
}

// imageOnlyPDF is a scan: one page that paints an image and no text.
func imageOnlyPDF() []byte {
	return pdfPages("q 612 0 0 792 0 0 cm /Im0 Do Q\n")
}

type zipEntry struct{ name, body string }

func zipOf(t testing.TB, entries ...zipEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, e := range entries {
		f, err := w.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, e.body)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const contentTypes = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"></Types>`

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"`

func docxOf(t testing.TB, body string) []byte {
	return zipOf(t,
		zipEntry{"[Content_Types].xml", contentTypes},
		zipEntry{"word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document ` + wordNS + `><w:body>` + body + `</w:body></w:document>`},
	)
}

func sampleDOCX(t testing.TB) []byte {
	return docxOf(t, `<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:t>Hello</w:t></w:r><w:r><w:tab/><w:t xml:space="preserve">world </w:t></w:r><w:r><w:t>again</w:t><w:br/><w:t>next line</w:t></w:r></w:p>`+
		`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>姓名</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>部门</w:t></w:r></w:p></w:tc></w:tr>`+
		`<w:tr><w:tc><w:p><w:r><w:t>张三</w:t></w:r></w:p><w:p><w:r><w:t>(经理)</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>研发</w:t></w:r></w:p></w:tc></w:tr></w:tbl>`+
		`<w:p><w:r><mc:AlternateContent><mc:Choice><w:t>box</w:t></mc:Choice><mc:Fallback><w:t>box</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>`+
		`<w:p><w:del><w:r><w:delText>deleted</w:delText></w:r></w:del><w:r><w:t>kept</w:t></w:r></w:p>`)
}

const sheetNS = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

func xlsxOf(t testing.TB, sheets ...[2]string) []byte {
	var wb, rels strings.Builder
	entries := []zipEntry{{"[Content_Types].xml", contentTypes}}
	for i, s := range sheets {
		fmt.Fprintf(&wb, `<sheet name="%s" sheetId="%d" r:id="rId%d"/>`, s[0], i+1, i+1)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>`, i+1, i+1)
		entries = append(entries, zipEntry{fmt.Sprintf("xl/worksheets/sheet%d.xml", i+1),
			`<?xml version="1.0"?><worksheet ` + sheetNS + `><sheetData>` + s[1] + `</sheetData></worksheet>`})
	}
	rels.WriteString(`<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>`)
	rels.WriteString(`<Relationship Id="rIdT" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>`)
	entries = append(entries,
		zipEntry{"xl/workbook.xml", `<?xml version="1.0"?><workbook ` + sheetNS + `><sheets>` + wb.String() + `</sheets></workbook>`},
		zipEntry{"xl/_rels/workbook.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`},
		zipEntry{"xl/sharedStrings.xml", `<?xml version="1.0"?><sst ` + sheetNS + `><si><t>名称</t></si><si><r><t>Rich </t></r><r><t>text</t></r><rPh><t>ふりがな</t></rPh></si><si><t>数量</t></si></sst>`},
		zipEntry{"xl/styles.xml", `<?xml version="1.0"?><styleSheet ` + sheetNS + `><numFmts><numFmt numFmtId="164" formatCode="yyyy/mm/dd;@"/><numFmt numFmtId="165" formatCode="&quot;¥&quot;#,##0.00"/></numFmts>` +
			`<cellXfs><xf numFmtId="0"/><xf numFmtId="14"/><xf numFmtId="164"/><xf numFmtId="10"/><xf numFmtId="165"/></cellXfs></styleSheet>`},
	)
	return zipOf(t, entries...)
}

func sampleXLSX(t testing.TB) []byte {
	return xlsxOf(t,
		[2]string{"Items", `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>2</v></c><c r="D1" t="inlineStr"><is><t>备注</t></is></c></row>` +
			`<row r="2"><c r="A2" t="s"><v>1</v></c><c r="B2"><v>0.30000000000000004</v></c><c r="C2" s="1"><v>45292</v></c><c r="D2" s="3"><v>0.125</v></c></row>` +
			`<row r="4"><c r="A4" t="b"><v>1</v></c><c r="B4" s="2"><v>45292.5</v></c><c r="C4" s="4"><v>1234.5</v></c><c r="D4" t="str"><f>A1</f><v>formula</v></c></row>`},
		[2]string{"空表", ``},
		[2]string{"Last", `<row><c><v>7</v></c><c t="e"><v>#DIV/0!</v></c></row>`},
	)
}

// bombZip holds one entry that declares declared bytes but inflates to
// inflated zeros. The central directory is honest about the compressed
// size, so archive/zip opens it; only inflating shows the lie.
func bombZip(t testing.TB, declared int64, inflated int) []byte {
	t.Helper()
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestSpeed)
	zero := make([]byte, 1<<20)
	crc := crc32.NewIEEE()
	for left := inflated; left > 0; left -= len(zero) {
		n := min(left, len(zero))
		fw.Write(zero[:n])
		crc.Write(zero[:n])
	}
	fw.Close()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, e := range []zipEntry{{"[Content_Types].xml", contentTypes}} {
		f, _ := w.Create(e.name)
		io.WriteString(f, e.body)
	}
	f, err := w.CreateRaw(&zip.FileHeader{
		Name: "word/document.xml", Method: zip.Deflate, CRC32: crc.Sum32(),
		CompressedSize64: uint64(comp.Len()), UncompressedSize64: uint64(declared),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Write(comp.Bytes())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// xrefStreamPDF writes a PDF whose cross-reference is a stream (W [1 4 2],
// no filter): objs are written as plain objects by number, inStream lists
// the objects inside object streams (number → the stream's number, all at
// index 0). Object 1 is the catalog.
func xrefStreamPDF(objs map[int]string, inStream map[int]int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	size := 0
	for id := range objs {
		size = max(size, id+1)
	}
	for id := range inStream {
		size = max(size, id+1)
	}
	offs := map[int]int{}
	for id := range size {
		if o, ok := objs[id]; ok {
			offs[id] = b.Len()
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", id, o)
		}
	}
	xrefID := size
	size++
	offs[xrefID] = b.Len()
	var data bytes.Buffer
	for id := range size {
		switch {
		case offs[id] > 0:
			data.Write([]byte{1, byte(offs[id] >> 24), byte(offs[id] >> 16), byte(offs[id] >> 8), byte(offs[id]), 0, 0})
		case inStream[id] > 0:
			s := inStream[id]
			data.Write([]byte{2, byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s), 0, 0})
		default:
			data.Write([]byte{0, 0, 0, 0, 0, 0xff, 0xff})
		}
	}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n%s\nendstream\nendobj\n",
		xrefID, size, data.Len(), data.Bytes())
	fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", offs[xrefID])
	return b.Bytes()
}

// objStmPDF keeps its page tree root (object 3) in object stream 4.
func objStmPDF(objStmDict string) []byte {
	inner := "3 0 "
	body := inner + "<< /Type /Pages /Kids [5 0 R] /Count 1 >>"
	return xrefStreamPDF(map[int]string{
		1: "<< /Type /Catalog /Pages 3 0 R >>",
		4: streamObj(fmt.Sprintf("/Type /ObjStm /N 1 /First %d %s", len(inner), objStmDict), body),
		5: "<< /Type /Page /Parent 3 0 R /Contents 6 0 R >>",
		6: streamObj("", "BT 72 700 Td (in an object stream) Tj ET"),
	}, map[int]int{3: 4})
}
