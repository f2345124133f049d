package document

// XLSX is read by hand (archive/zip + encoding/xml) rather than with
// excelize: excelize inflates every part into memory before we can stop
// it, may spill large sheets to temporary files, cannot be interrupted by a
// deadline, and brings a dependency tree of its own. Streaming each part
// through entryReader keeps the zip caps, the parse budget and MaxChars in
// force while reading, and stops as soon as the budget is spent. What it
// costs us is number formatting, done here only where a prompt needs it:
// dates (which are stored as serial numbers) and percentages.

import (
	"context"
	"encoding/xml"
	"fmt"
	"path"
	"strings"
)

// maxSharedStrings bounds the shared-string table (Excel's own limit on
// unique strings is far above what a prompt can use, but the table must be
// held whole because cells index it).
const maxSharedStrings = 1 << 20

// maxCellBytes bounds one cell's text (Excel allows 32767 characters).
const maxCellBytes = 64 << 10

// maxColumns is Excel's column count (XFD); a reference past it is junk.
const maxColumns = 16384

type xlWorkbook struct {
	Pr struct {
		Date1904 string `xml:"date1904,attr"`
	} `xml:"workbookPr"`
	Sheets []struct {
		Name string `xml:"name,attr"`
		RID  string `xml:"id,attr"` // r:id, in either the transitional or the strict namespace
	} `xml:"sheets>sheet"`
}

type xlRels struct {
	Rels []struct {
		ID     string `xml:"Id,attr"`
		Type   string `xml:"Type,attr"`
		Target string `xml:"Target,attr"`
	} `xml:"Relationship"`
}

// workbook is what reading the sheets needs from the other parts.
type workbook struct {
	strings  []string
	styles   []numClass // by cell style index (the s attribute)
	date1904 bool
}

func extractXLSX(ctx context.Context, in input, lim Limits) (Result, error) {
	a, err := openArchive(ctx, in.data, lim)
	if err != nil {
		return Result{}, err
	}
	raw, err := a.readAll("xl/workbook.xml")
	if err != nil {
		return Result{}, err
	}
	var wb xlWorkbook
	if err := xml.Unmarshal(raw, &wb); err != nil {
		return Result{}, xmlErr("xl/workbook.xml", err)
	}
	targets := map[string]string{} // relationship id → part name
	sharedPart := "xl/sharedStrings.xml"
	stylesPart := "xl/styles.xml"
	if a.has("xl/_rels/workbook.xml.rels") {
		raw, err := a.readAll("xl/_rels/workbook.xml.rels")
		if err != nil {
			return Result{}, err
		}
		var rels xlRels
		if err := xml.Unmarshal(raw, &rels); err != nil {
			return Result{}, xmlErr("xl/_rels/workbook.xml.rels", err)
		}
		for _, r := range rels.Rels {
			part := partName(r.Target)
			targets[r.ID] = part
			switch {
			case strings.HasSuffix(r.Type, "/sharedStrings"):
				sharedPart = part
			case strings.HasSuffix(r.Type, "/styles"):
				stylesPart = part
			}
		}
	}
	book := workbook{date1904: wb.Pr.Date1904 == "1" || wb.Pr.Date1904 == "true"}
	if a.has(stylesPart) {
		if book.styles, err = readStyles(a, stylesPart); err != nil {
			return Result{}, err
		}
	}
	if a.has(sharedPart) {
		if book.strings, err = readSharedStrings(ctx, a, sharedPart); err != nil {
			return Result{}, err
		}
	}
	s := newSink(lim.MaxChars)
	for i, sh := range wb.Sheets {
		part, ok := targets[sh.RID]
		if !ok {
			part = fmt.Sprintf("xl/worksheets/sheet%d.xml", i+1)
		}
		if !a.has(part) {
			continue // a chart sheet without cells, or a dangling id
		}
		if !s.section("[sheet " + sh.Name + "]") {
			break
		}
		if err := readSheet(ctx, a, part, &book, s); err != nil {
			return Result{}, err
		}
		if s.full {
			break
		}
	}
	res, err := finishText(s)
	res.Sheets = len(wb.Sheets)
	return res, err
}

// partName resolves a relationship target, relative to xl/ or absolute.
func partName(target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return path.Clean(path.Join("xl", target))
}

// readSharedStrings reads xl/sharedStrings.xml: each si is the text of its
// t elements (plain or in rich-text runs), without phonetic runs (rPh).
func readSharedStrings(ctx context.Context, a *archive, part string) ([]string, error) {
	r, err := a.open(part)
	if err != nil {
		return nil, err
	}
	d := xml.NewDecoder(r)
	var (
		out      []string
		cur      strings.Builder
		inSI     bool
		inT, inP int
	)
	for n := 0; ; n++ {
		tok, done, err := nextToken(ctx, d, n, part)
		switch {
		case err != nil:
			return nil, err
		case done:
			return out, nil
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				inSI = true
				cur.Reset()
			case "t":
				inT++
			case "rPh":
				inP++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				if len(out) >= maxSharedStrings {
					return nil, fmt.Errorf("%w: xlsx: over %d shared strings", ErrBomb, maxSharedStrings)
				}
				out = append(out, cur.String())
				inSI = false
			case "t":
				inT = max(inT-1, 0)
			case "rPh":
				inP = max(inP-1, 0)
			}
		case xml.CharData:
			if inSI && inT > 0 && inP == 0 && cur.Len() < maxCellBytes {
				cur.Write(t)
			}
		}
	}
}

// readSheet writes one worksheet: each row with a value a line, its cells
// in column order separated by tabs (gaps kept as empty cells).
func readSheet(ctx context.Context, a *archive, part string, book *workbook, s *sink) error {
	r, err := a.open(part)
	if err != nil {
		return err
	}
	d := xml.NewDecoder(r)
	var (
		row          []string
		line         strings.Builder
		cell         xlCell
		inCell       bool
		inV, inT, ph int
		val          strings.Builder
		col          int
	)
	for n := 0; ; n++ {
		tok, done, err := nextToken(ctx, d, n, part)
		if done || err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row, col = row[:0], 0
			case "c":
				inCell = true
				cell = xlCell{col: col}
				val.Reset()
				for _, at := range t.Attr {
					switch at.Name.Local {
					case "r":
						if c, ok := columnOf(at.Value); ok {
							cell.col = c
						}
					case "t":
						cell.typ = at.Value
					case "s":
						cell.style = at.Value
					}
				}
			case "v":
				inV++
			case "t":
				inT++
			case "rPh":
				ph++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "c":
				inCell = false
				col = cell.col + 1
				v := cell.text(val.String(), book)
				if v == "" || cell.col >= maxColumns {
					continue
				}
				for len(row) <= cell.col {
					row = append(row, "")
				}
				row[cell.col] = v
			case "row":
				if len(row) == 0 {
					continue
				}
				line.Reset()
				writeRow(&line, row)
				if !s.write(line.String()) {
					return nil
				}
			case "v":
				inV = max(inV-1, 0)
			case "t":
				inT = max(inT-1, 0)
			case "rPh":
				ph = max(ph-1, 0)
			}
		case xml.CharData:
			if inCell && (inV > 0 || inT > 0 && ph == 0) && val.Len() < maxCellBytes {
				val.Write(t)
			}
		}
	}
}

// columnOf returns the zero-based column of a reference such as "AB12".
func columnOf(ref string) (int, bool) {
	c := 0
	i := 0
	for ; i < len(ref); i++ {
		ch := ref[i] | 0x20 // lower case
		if ch < 'a' || ch > 'z' {
			break
		}
		c = c*26 + int(ch-'a'+1)
		if c > maxColumns {
			return 0, false
		}
	}
	if i == 0 {
		return 0, false
	}
	return c - 1, true
}
