package document

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
)

// xmlCheckEvery is how many XML tokens are read between ctx checks (the
// entry reader checks too, per read; this covers a large buffered entry).
const xmlCheckEvery = 4096

// nextToken is the n-th token of part's XML, checking ctx every
// xmlCheckEvery tokens; done at the part's end.
func nextToken(ctx context.Context, d *xml.Decoder, n int, part string) (tok xml.Token, done bool, err error) {
	if n%xmlCheckEvery == 0 && ctx.Err() != nil {
		return nil, false, ctxErr(ctx)
	}
	tok, err = d.Token()
	if errors.Is(err, io.EOF) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, xmlErr(part, err)
	}
	return tok, false, nil
}

func extractDOCX(ctx context.Context, in input, lim Limits) (Result, error) {
	a, err := openArchive(ctx, in.data, lim)
	if err != nil {
		return Result{}, err
	}
	r, err := a.open("word/document.xml")
	if err != nil {
		return Result{}, err
	}
	s := newSink(lim.MaxChars)
	if err := docxText(ctx, r, s); err != nil {
		return Result{}, err
	}
	return finishText(s)
}

// docxText writes the body of word/document.xml: each paragraph (w:p) a
// line, w:t its text, w:tab a tab, w:br and w:cr a newline; a table row
// (w:tr) a line whose cells (w:tc) are separated by tabs. Elements are
// matched by local name, so Strict OOXML's namespace works too.
// mc:Fallback is skipped: it repeats the mc:Choice next to it (text boxes
// are written twice for old readers).
func docxText(ctx context.Context, r io.Reader, s *sink) error {
	d := xml.NewDecoder(r)
	var (
		inText    int // depth inside w:t
		inRun     int // depth inside w:r (a w:tab elsewhere is a tab stop)
		cellDepth int // depth inside w:tc
		cells     []int
		gap       bool // a paragraph ended inside a cell: a space before more text
	)
	for n := 0; ; n++ {
		tok, done, err := nextToken(ctx, d, n, "word/document.xml")
		if done || err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "Fallback":
				if err := d.Skip(); err != nil {
					return xmlErr("word/document.xml", err)
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
				s.write(string(t))
			}
		}
		if s.full {
			return nil
		}
	}
}
