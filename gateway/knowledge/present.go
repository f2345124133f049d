package knowledge

import (
	"slices"
	"strings"
	"time"
)

// What the model reads of a search (knowledge_search's result). Every
// token of it is read again at each later step of the run, and a rule's
// answer is a sentence or two: so the passages go as plain text, grouped
// by document, with no JSON keys, escapes or titles repeated per passage:
//
//	《差旅费报销标准》2026版（2026-01-01 起）
//	[一、住宿标准] 一线城市（北京、上海、广州、深圳）每人每晚不超过 550 元；…
//	[二、伙食补助] 出差期间伙食补助每人每天 100 元，…
//
//	《出差城市等级表》
//	城市: 成都；城市等级: 二线；所在省份: 四川
//
// A document's block starts with its title line (《title》, its version,
// and, when two documents given have one, its effective date: what the
// model needs to follow the one in force and say which version it used;
// superseded versions are never searched) and ends at a blank line; each passage is
// one paragraph, led by its section when it has one. Pages are left out:
// the model does not cite, Hermes does (Annotate), and its sources line
// names them.

// noPassages is the result of a search that found nothing.
const noPassages = "No document this user may see matches. Say the company's documents do not cover it."

// present is the result text of a search that returned ps, best first:
// the documents in the order of their best passage.
func present(ps []Passage) string {
	if len(ps) == 0 {
		return noPassages
	}
	var order []int64
	byDoc := map[int64][]Passage{}
	for _, p := range ps {
		if _, ok := byDoc[p.DocumentID]; !ok {
			order = append(order, p.DocumentID)
		}
		byDoc[p.DocumentID] = append(byDoc[p.DocumentID], p)
	}
	// Effective dates decide between documents that disagree: given
	// only when two of the documents have one.
	dated := 0
	for _, id := range order {
		if !byDoc[id][0].Effective.IsZero() {
			dated++
		}
	}
	var b strings.Builder
	for i, id := range order {
		if i > 0 {
			b.WriteString("\n\n")
		}
		group := byDoc[id]
		b.WriteString(documentLine(group[0], dated > 1))
		for _, p := range group {
			b.WriteByte('\n')
			text := compactLines(p.Text)
			// A window starting at a merged section has its marker already.
			if s := sectionOf(p.Heading, p.Title); s != "" && !strings.HasPrefix(text, marker(s)) {
				b.WriteString(marker(s))
			}
			b.WriteString(text)
		}
	}
	return b.String()
}

// documentLine is a document's title line: 《title》version, and its
// effective date when it has one and dated.
func documentLine(p Passage, dated bool) string {
	s := "《" + p.Title + "》" + p.Version
	if dated && !p.Effective.IsZero() {
		s += "（" + p.Effective.Format(time.DateOnly) + " 起）"
	}
	return s
}

// compactLines is text without blank lines and the spaces around its
// lines (a blank line ends a document's block), its runs of table rows
// written as a table (tabled).
func compactLines(text string) string {
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(tabled(out), "\n")
}

// Table rows are passages of their own, each with its header's names
// (「项目: 养老保险；公司比例: 16%；个人比例: 8%」, chunk.go), so that a
// row found alone still reads whole. Adjacent rows of one table given
// together name the columns once: a line of the names, then a line of
// values per row, joined by cellSep.
const cellSep = " | "

// tabled is lines with each run of at least two rows of the same
// columns (a row whose last cells are empty has fewer) written as a
// table; the first row's section marker, if any, leads the names.
func tabled(lines []string) []string {
	var out []string
	for i := 0; i < len(lines); {
		lead, names, _ := cells(lines[i])
		j := i + 1
		for names != nil && j < len(lines) {
			more, next, _ := cells(lines[j])
			if more != "" || len(next) == 0 || !slices.Equal(next, names[:min(len(next), len(names))]) {
				break
			}
			j++
		}
		if j-i < 2 {
			out = append(out, lines[i])
			i++
			continue
		}
		out = append(out, lead+strings.Join(names, cellSep))
		for _, l := range lines[i:j] {
			_, _, values := cells(l)
			out = append(out, strings.Join(values, cellSep))
		}
		i = j
	}
	return out
}

// cells are the section marker, column names and values of a table
// row's line; names are nil when the line is not one.
func cells(line string) (lead string, names, values []string) {
	if h := lastMarker(line); h != "" && strings.HasPrefix(line, marker(h)) {
		lead, line = marker(h), line[len(marker(h)):]
	}
	for _, cell := range strings.Split(line, "；") {
		name, value, ok := strings.Cut(cell, ": ")
		if !ok || name == "" || strings.Contains(value, cellSep) {
			return "", nil, nil
		}
		names, values = append(names, name), append(values, value)
	}
	return lead, names, values
}
