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
	"unicode/utf8"
)

// maxSharedStrings bounds the shared-string table (Excel's own limit on
// unique strings is far above what a prompt can use, but the table must be
// held whole because cells index it).
const maxSharedStrings = 1 << 20

// maxCellBytes bounds one cell's text (Excel allows 32767 characters).
const maxCellBytes = 64 << 10

// maxColumns is Excel's column count (XFD); a reference past it is junk.
const maxColumns = 16384

// workbook is what reading the sheets needs from the other parts.
type workbook struct {
	strings  []string
	styles   []numClass // by cell style index (the s attribute)
	date1904 bool
	// partial: strings holds only the start of the shared strings
	// (sharedKeepPerChar); missing: a cell referred to one not held.
	partial, missing bool
	chars            int // characters in strings, for the markup budget
}

func extractXLSX(ctx context.Context, in input, lim Limits) (Result, error) {
	s := newSink(lim.MaxChars)
	var book workbook
	a, err := openArchive(ctx, in, lim, func() int { return s.text + book.chars })
	if err != nil {
		return Result{}, err
	}
	sheets, date1904, err := readWorkbook(a)
	if err != nil {
		return Result{}, err
	}
	book.date1904 = date1904
	targets := map[string]string{} // relationship id → part name
	sharedPart := "xl/sharedStrings.xml"
	stylesPart := "xl/styles.xml"
	if a.has("xl/_rels/workbook.xml.rels") {
		rels, err := readRels(a, "xl/_rels/workbook.xml.rels")
		if err != nil {
			return Result{}, err
		}
		for _, r := range rels {
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
	if a.has(stylesPart) {
		if book.styles, err = readStyles(a, stylesPart); err != nil {
			return Result{}, err
		}
	}
	if a.has(sharedPart) {
		if err = readSharedStrings(a, sharedPart, &book, sharedKeepPerChar*lim.MaxChars); err != nil {
			return Result{}, err
		}
	}
	for i, sh := range sheets {
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
		if err := readSheet(a, part, &book, s); err != nil {
			res, err := stopped(s, err)
			res.Sheets = len(sheets)
			return res, err
		}
		if s.full {
			break
		}
	}
	if book.missing {
		s.cut()
	}
	res, err := finishText(s)
	res.Sheets = len(sheets)
	return res, err
}

// partName resolves a relationship target, relative to xl/ or absolute.
func partName(target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return path.Clean(path.Join("xl", target))
}

// sharedKeepPerChar is how many bytes of shared strings are held for
// each character of MaxChars: cells refer to the table by index, so it is
// read before the sheets, but the rows a prompt can show refer mostly to
// its start (Excel numbers strings in the order it first meets them). A
// cell referring past what is held reads as empty and marks the text
// truncated.
const sharedKeepPerChar = 16

// readSharedStrings reads xl/sharedStrings.xml into book.strings, up to
// keep bytes: each si is the text of its t elements (plain or in
// rich-text runs), without phonetic runs (rPh).
func readSharedStrings(a *archive, part string, book *workbook, keep int) error {
	p, err := a.part(part)
	if err != nil {
		return err
	}
	var (
		cur      strings.Builder
		held     int
		inSI     bool
		inT, inP int
	)
	for {
		tok, done, err := p.next()
		switch {
		case err != nil:
			return err
		case done:
			return nil
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
				if len(book.strings) >= maxSharedStrings {
					return fmt.Errorf("%w: xlsx: over %d shared strings", ErrBomb, maxSharedStrings)
				}
				str := cur.String()
				book.strings = append(book.strings, str)
				book.chars += utf8.RuneCountInString(str)
				inSI = false
				if held += len(str); held > keep {
					book.partial = true
					return nil
				}
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
func readSheet(a *archive, part string, book *workbook, s *sink) error {
	p, err := a.part(part)
	if err != nil {
		return err
	}
	var (
		row          []string
		line         strings.Builder
		cell         xlCell
		inCell       bool
		inV, inT, ph int
		val          strings.Builder
		col          int
	)
	for {
		tok, done, err := p.next()
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
