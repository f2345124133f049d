package document

import (
	"context"
	"encoding/xml"
)

func extractDOCX(ctx context.Context, in input, lim Limits) (Result, error) {
	s := newSink(lim.MaxChars)
	a, err := openArchive(ctx, in, lim, func() int { return s.text })
	if err != nil {
		return Result{}, err
	}
	p, err := a.part("word/document.xml")
	if err != nil {
		return Result{}, err
	}
	if err := docxText(p, s); err != nil {
		return stopped(s, err)
	}
	return finishText(s)
}

// docxText writes the body of word/document.xml: each paragraph (w:p) a
// line, w:t its text, w:tab a tab, w:br and w:cr a newline; a table row
// (w:tr) a line whose cells (w:tc) are separated by tabs. Elements are
// matched by local name, so Strict OOXML's namespace works too.
// mc:Fallback is skipped: it repeats the mc:Choice next to it (text boxes
// are written twice for old readers).
func docxText(p *xmlPart, s *sink) error {
	var (
		inText    int // depth inside w:t
		inRun     int // depth inside w:r (a w:tab elsewhere is a tab stop)
		cellDepth int // depth inside w:tc
		cells     []int
		gap       bool // a paragraph ended inside a cell: a space before more text
	)
	for {
		tok, done, err := p.next()
		if done || err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "Fallback":
				if err := p.skip(); err != nil {
					return err
				}
			case "t":
				inText++
			case "r":
				inRun++
			case "tab":
				if inRun > 0 {
					s.write("\t")
				}
			case "br", "cr":
				if inRun > 0 {
					s.write("\n")
				}
			case "noBreakHyphen":
				s.write("-")
			case "tr":
				cells = append(cells, 0)
			case "tc":
				cellDepth++
				gap = false
				if k := len(cells) - 1; k >= 0 {
					if cells[k] > 0 {
						s.write("\t")
					}
					cells[k]++
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = max(inText-1, 0)
			case "r":
				inRun = max(inRun-1, 0)
			case "p":
				if cellDepth > 0 {
					gap = true
				} else {
					s.write("\n")
				}
			case "tc":
				cellDepth = max(cellDepth-1, 0)
			case "tr":
				if len(cells) > 0 {
					cells = cells[:len(cells)-1]
				}
				gap = false
				s.write("\n")
			}
		case xml.CharData:
			if inText > 0 {
				if gap {
					s.space()
					gap = false
				}
				s.writeBytes(t) // no copy of a large token
			}
		}
		if s.full {
			return nil
		}
	}
}
