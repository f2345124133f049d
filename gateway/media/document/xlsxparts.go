package document

// The small parts of a workbook (workbook.xml, its relationships,
// styles.xml) are read token by token through xmlPart, not with
// xml.Unmarshal, so that their tokens count against the markup budget like
// every other part's: a styles part of ten million empty <xf/> would
// otherwise cost gigabytes before the first sheet is opened.

import (
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
)

// xlSheet is one sheet of the workbook, in order.
type xlSheet struct {
	Name string
	RID  string // r:id, in either the transitional or the strict namespace
}

// xlRel is one relationship of the workbook.
type xlRel struct {
	ID, Type, Target string
}

// elementWalk calls start for every element of p with its depth (the root
// is 0) and the local name of its depth-1 ancestor ("" for the root and
// its children), until the part ends, an error, or start returns false.
func elementWalk(p *xmlPart, start func(t xml.StartElement, depth int, section string) bool) error {
	depth, section := 0, ""
	for {
		tok, done, err := p.next()
		if done || err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 1 {
				section = t.Name.Local
			}
			sec := section
			if depth <= 1 {
				sec = ""
			}
			if !start(t, depth, sec) {
				return nil
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
}

// attr is the value of the attribute with local name local ("" if none).
func attr(t xml.StartElement, local string) string {
	for _, a := range t.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// readWorkbook reads the sheets (sheets>sheet) and the date system
// (workbookPr date1904) of xl/workbook.xml.
func readWorkbook(a *archive) (sheets []xlSheet, date1904 bool, err error) {
	p, err := a.part("xl/workbook.xml")
	if err != nil {
		return nil, false, err
	}
	err = elementWalk(p, func(t xml.StartElement, depth int, section string) bool {
		switch {
		case depth == 1 && t.Name.Local == "workbookPr":
			v := attr(t, "date1904")
			date1904 = v == "1" || v == "true"
		case depth == 2 && section == "sheets" && t.Name.Local == "sheet":
			sheets = append(sheets, xlSheet{Name: attr(t, "name"), RID: attr(t, "id")})
		}
		return true
	})
	return sheets, date1904, err
}

// readRels reads the relationships (Relationship) of a .rels part.
func readRels(a *archive, part string) ([]xlRel, error) {
	p, err := a.part(part)
	if err != nil {
		return nil, err
	}
	var rels []xlRel
	err = elementWalk(p, func(t xml.StartElement, depth int, _ string) bool {
		if depth == 1 && t.Name.Local == "Relationship" {
			rels = append(rels, xlRel{ID: attr(t, "Id"), Type: attr(t, "Type"), Target: attr(t, "Target")})
		}
		return true
	})
	return rels, err
}

// stylesMaxTokens bounds the styles part: past it the formatting is
// ignored (dates read as serial numbers). Some workbooks carry tens of
// thousands of duplicated cell styles; their text still deserves its
// budget.
const stylesMaxTokens = 32 << 10

// readStyles maps each cell style (cellXfs>xf) to its numClass, from the
// number formats (numFmts>numFmt). A styles part that does not parse, or
// is over stylesMaxTokens, costs only the formatting, so it is ignored,
// not an error; the markup budget's errors are errors.
func readStyles(a *archive, part string) ([]numClass, error) {
	p, err := a.part(part)
	if err != nil {
		return nil, err
	}
	custom := map[int]string{}
	var xfs []int
	bad, n := false, 0
	err = elementWalk(p, func(t xml.StartElement, depth int, section string) bool {
		if n++; n > stylesMaxTokens {
			bad = true
			return false
		}
		switch {
		case depth == 2 && section == "numFmts" && t.Name.Local == "numFmt":
			id, ok := xmlInt(attr(t, "numFmtId"))
			bad = bad || !ok
			custom[id] = attr(t, "formatCode")
		case depth == 2 && section == "cellXfs" && t.Name.Local == "xf":
			id, ok := xmlInt(attr(t, "numFmtId"))
			bad = bad || !ok
			xfs = append(xfs, id)
		}
		return !bad
	})
	var syntax *xml.SyntaxError
	switch {
	case bad, errors.As(err, &syntax):
		return nil, nil
	case err != nil:
		return nil, err // the zip's errors, the parse budget, the markup budget
	}
	out := make([]numClass, len(xfs))
	for i, id := range xfs {
		code, ok := custom[id]
		out[i] = classify(id, code, ok)
	}
	return out, nil
}

// xmlInt reads an integer attribute as xml.Unmarshal does: spaces
// trimmed, empty is 0.
func xmlInt(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
