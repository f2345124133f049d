package knowledge

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/gateway/media/document"
)

// Passage sizes, in characters (runes). A passage is one heading's text
// up to targetRunes, cut at a blank line once past it and at a line past
// maxRunes; a list of numbered steps is kept whole up to stepsMaxRunes,
// since a step out of its list answers nothing. About 300 characters is a
// paragraph or two of a handbook: small enough that a question's words
// are not drowned in unrelated ones, large enough to hold a rule with its
// conditions.
const (
	targetRunes   = 300
	maxRunes      = 700
	stepsMaxRunes = 1400
)

// Chunk is one passage of a document as cut by its structure.
type Chunk struct {
	// Heading is the heading path ("第三章 假期 > 婚假"), "" before any.
	Heading string
	// Page is the PDF page the passage starts on, 0 for other kinds.
	Page int
	Text string
}

var (
	mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`)
	// Chinese structural headings: 第一章 (level 1), 第一节 (level 2),
	// 一、 (level 2, when the line is short enough to be a title).
	cnChapter  = regexp.MustCompile(`^第[一二三四五六七八九十百零〇0-9]+章`)
	cnSection  = regexp.MustCompile(`^第[一二三四五六七八九十百零〇0-9]+节`)
	cnArticle  = regexp.MustCompile(`^第[一二三四五六七八九十百零〇0-9]+条`)
	cnEnum     = regexp.MustCompile(`^[一二三四五六七八九十]+[、.．]`)
	stepLine   = regexp.MustCompile(`^(\d{1,2}[.、．)）]|[（(]\d{1,2}[)）]|第[一二三四五六七八九十]+步|步骤\s*\d)`)
	pageMarker = regexp.MustCompile(`^\[page (\d+)\]$`)
	sheetLine  = regexp.MustCompile(`^\[sheet (.+)\]$`)
	mdTableSep = regexp.MustCompile(`^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$`)
)

// shortTitle is how long a 一、 line may be to be taken as a heading.
const shortTitle = 30

// chunker cuts one document's text into passages.
type chunker struct {
	out     []Chunk
	heads   [6]string // heading by level 1..6
	page    int
	buf     []string
	runes   int
	steps   bool     // the buffer holds a numbered list
	header  []string // the current table's header row, nil outside a table
	tabular bool     // every line is a table row (CSV, XLSX)
}

// Cut cuts an extracted document into passages by its structure:
// headings (Markdown's #, 第…章, 第…节, short 一、 lines) open a new
// heading path; 第…条 and PDF pages start a new passage; numbered steps
// stay together; a table (CSV, XLSX sheets, Markdown or tab-separated
// rows) gives one passage per row, each written with its header
// ("项目: 住宿；一线城市: 500"), so a row answers on its own.
func Cut(res document.Result) []Chunk {
	text := res.Text
	if res.Kind == document.Text && looksHTML(text) {
		text = htmlText(text)
	}
	c := &chunker{tabular: res.Kind == document.CSV || res.Kind == document.XLSX}
	for line := range strings.Lines(text) {
		c.line(strings.TrimRight(line, "\r\n"))
	}
	c.flush()
	return c.out
}

func (c *chunker) line(raw string) {
	line := strings.TrimSpace(raw)
	if line == "[truncated]" {
		return
	}
	if m := pageMarker.FindStringSubmatch(line); m != nil {
		c.flush()
		c.page, _ = strconv.Atoi(m[1])
		return
	}
	if m := sheetLine.FindStringSubmatch(line); m != nil && c.tabular {
		c.flush()
		c.setHeading(1, m[1])
		c.header = nil
		return
	}
	if line == "" {
		if !c.tabular {
			c.header = nil
		}
		if c.runes >= targetRunes && !c.steps {
			c.flush()
		}
		return
	}
	if cells, ok := c.tableRow(raw, line); ok {
		c.row(cells)
		return
	}
	c.header = nil
	if level, title, ok := heading(line); ok {
		c.flush()
		c.setHeading(level, title)
		return
	}
	if cnArticle.MatchString(line) {
		c.flush()
	}
	isStep := stepLine.MatchString(line)
	switch {
	case isStep && !c.steps:
		if c.runes >= targetRunes {
			c.flush()
		}
		c.steps = true
	case !isStep && c.steps && c.runes >= targetRunes:
		c.flush()
	}
	limit := maxRunes
	if c.steps {
		limit = stepsMaxRunes
	}
	if c.runes >= limit {
		c.flush()
	}
	c.buf = append(c.buf, line)
	c.runes += utf8.RuneCountInString(line)
}

// heading reports whether line is a heading, and its level and title.
func heading(line string) (int, string, bool) {
	if m := mdHeading.FindStringSubmatch(line); m != nil {
		return len(m[1]), strings.TrimSpace(m[2]), true
	}
	n := utf8.RuneCountInString(line)
	switch {
	case cnChapter.MatchString(line) && n <= shortTitle:
		return 1, line, true
	case cnSection.MatchString(line) && n <= shortTitle:
		return 2, line, true
	case cnEnum.MatchString(line) && n <= shortTitle && !strings.ContainsAny(line, "。；;"):
		return 2, line, true
	}
	return 0, "", false
}

func (c *chunker) setHeading(level int, title string) {
	c.heads[level-1] = strings.TrimSpace(title)
	for i := level; i < len(c.heads); i++ {
		c.heads[i] = ""
	}
}

// tableRow splits a table line into its cells: any line of a CSV or
// XLSX, a Markdown row (|a|b|) or a line with tabs (DOCX tables, pasted
// spreadsheets). Markdown's separator row is a row of nothing.
func (c *chunker) tableRow(raw, line string) ([]string, bool) {
	var cells []string
	switch {
	case c.tabular || strings.Contains(raw, "\t"):
		cells = strings.Split(line, "\t")
	case strings.HasPrefix(line, "|") && strings.Count(line, "|") >= 2:
		if mdTableSep.MatchString(line) {
			return nil, true
		}
		cells = strings.Split(strings.Trim(line, "|"), "|")
	default:
		return nil, false
	}
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells, true
}

// row is one table row: the first of a table is its header, each later
// one a passage of its own with the header's names.
func (c *chunker) row(cells []string) {
	if cells == nil { // Markdown's separator
		return
	}
	if c.header == nil {
		c.flush()
		c.header = cells
		return
	}
	var b strings.Builder
	for i, v := range cells {
		if v == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("；")
		}
		if i < len(c.header) && c.header[i] != "" {
			b.WriteString(c.header[i])
			b.WriteString(": ")
		}
		b.WriteString(v)
	}
	if b.Len() == 0 {
		return
	}
	c.flush()
	c.buf = []string{b.String()}
	c.runes = utf8.RuneCountInString(b.String())
	c.flush()
}

// flush ends the current passage.
func (c *chunker) flush() {
	if len(c.buf) > 0 {
		var path []string
		for _, h := range c.heads {
			if h != "" {
				path = append(path, h)
			}
		}
		c.out = append(c.out, Chunk{Heading: strings.Join(path, " > "), Page: c.page, Text: strings.Join(c.buf, "\n")})
	}
	c.buf, c.runes, c.steps = nil, 0, false
}

// looksHTML: a text document that is an HTML page (an intranet page
// saved as .html).
func looksHTML(text string) bool {
	head := strings.ToLower(text[:min(len(text), 1024)])
	return strings.Contains(head, "<html") || strings.Contains(head, "<!doctype html") ||
		strings.Contains(head, "<body") || strings.Contains(head, "<h1")
}

var (
	htmlDrop    = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)>`)
	htmlHeading = regexp.MustCompile(`(?is)<h([1-6])\b[^>]*>(.*?)</h[1-6]>`)
	htmlBreak   = regexp.MustCompile(`(?i)<(br|p|div|li|ul|ol|section|article)\b[^>]*>|</(p|div|ul|ol|section|article)>`)
	htmlTable   = regexp.MustCompile(`(?is)<table\b[^>]*>(.*?)</table>`)
	htmlRow     = regexp.MustCompile(`(?i)<tr\b[^>]*>`)
	htmlCell    = regexp.MustCompile(`(?i)</t[dh]>\s*<t[dh]\b[^>]*>`)
	htmlTag     = regexp.MustCompile(`(?s)<[^>]*>`)
)

// htmlText is an HTML page as the Markdown-like text Cut reads: headings
// as #, block ends as line breaks, table cells separated by tabs.
func htmlText(s string) string {
	s = htmlDrop.ReplaceAllString(s, "")
	s = htmlHeading.ReplaceAllStringFunc(s, func(m string) string {
		g := htmlHeading.FindStringSubmatch(m)
		n, _ := strconv.Atoi(g[1])
		return "\n" + strings.Repeat("#", n) + " " + strings.Join(strings.Fields(htmlTag.ReplaceAllString(g[2], "")), " ") + "\n"
	})
	// A table's rows are one line each, with no blank line between them
	// (a blank line ends a table in Cut): the page's own line breaks
	// inside a table are layout, not text.
	s = htmlTable.ReplaceAllStringFunc(s, func(m string) string {
		inner := strings.NewReplacer("\r", "", "\n", "").Replace(htmlTable.FindStringSubmatch(m)[1])
		return "\n" + htmlRow.ReplaceAllString(inner, "\n") + "\n\n"
	})
	s = htmlCell.ReplaceAllString(s, "\t")
	s = htmlBreak.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	return html.UnescapeString(s)
}
