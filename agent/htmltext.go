package agent

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlSkip are elements whose content is never readable text.
var htmlSkip = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Head: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Iframe: true, atom.Object: true,
}

// htmlBlock are elements that start a new line in the text.
var htmlBlock = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Br: true, atom.Li: true, atom.Tr: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Section: true, atom.Article: true,
	atom.Header: true, atom.Footer: true, atom.Blockquote: true, atom.Pre: true, atom.Hr: true,
	atom.Dt: true, atom.Dd: true, atom.Title: true,
}

// htmlToText turns an HTML page into readable text with the tokenizer: the
// text of the body (and the title), without scripts, styles or markup, one
// line per block element, list items as "- ", table cells separated by
// " | ". The tokenizer never fails on broken markup; it reads what it can.
func htmlToText(page []byte) string {
	z := html.NewTokenizer(bytes.NewReader(page))
	var b strings.Builder
	skip := 0 // depth inside skipped elements
	title := ""
	inTitle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken: // io.EOF or a read error: the end either way
			// Blocks open and close with a line break; one is enough.
			text := strings.ReplaceAll(normalizeText(b.String()), "\n\n", "\n")
			if title != "" && !strings.HasPrefix(text, title) {
				text = title + "\n" + text
			}
			return text
		case html.TextToken:
			if inTitle { // inside <head>, which is otherwise skipped
				title = strings.TrimSpace(string(z.Text()))
				continue
			}
			if skip > 0 {
				continue
			}
			b.Write(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case htmlSkip[a]:
				if tt == html.StartTagToken {
					skip++
				}
			case a == atom.Li:
				b.WriteString("\n- ")
			case a == atom.Td || a == atom.Th:
				b.WriteString(" | ")
			case htmlBlock[a]:
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Title:
				inTitle = false
			case htmlSkip[a]:
				if skip > 0 {
					skip--
				}
			case htmlBlock[a]:
				b.WriteByte('\n')
			}
		}
	}
}
