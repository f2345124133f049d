package knowledge

import (
	"regexp"
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
//	[住宿标准] 一线城市（北京、上海、广州、深圳）每人每晚不超过 550 元；…
//	[伙食补助] 出差期间伙食补助每人每天 100 元，…
//
//	《付款审批权限表》
//	付款类型 | 金额区间 | 审批人
//	供应商付款 | 5 万元以下 | 财务经理
//	供应商付款 | 5 万至 50 万元 | 财务总监
//
// A document's block starts with its title line and ends at a blank
// line. The title line is 《title》, its version, and, when two of the
// documents given have one, its effective date: what the model needs to
// follow the one in force and say which version it used (superseded
// versions are never searched). Each passage is a paragraph led by its
// section when it has one; lines that only repeat the title are left
// out, and rows of one table name its columns once (tabled). Pages are
// left out too: the model does not cite, Hermes does (Annotate), and its
// sources line names them.

// noPassages is the result of a search that found nothing.
const noPassages = "No document this user may see matches. Say the company's documents do not cover it."

// present is the result text of a search that returned ps, best first:
// the documents in the order of their best passage.
func present(ps []Passage) string {
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
	var blocks []string
	for _, id := range order {
		group := byDoc[id]
		var lines []string
		for _, p := range group {
			text := compactLines(p.Text, p.Title)
			if text == "" {
				continue
			}
			// A window starting at a merged section has its marker
			// already; the text left out before it is another section's.
			if kept := strings.TrimPrefix(text, ellipsis); led(kept) {
				text = kept
			}
			if s := sectionOf(p.Heading, p.Title); s != "" && !led(text) {
				text = marker(s) + text
			}
			for _, l := range strings.Split(text, "\n") {
				lines = append(lines, unnumbered(l))
			}
		}
		if len(lines) > 0 {
			blocks = append(blocks, documentLine(group[0], dated > 1)+"\n"+strings.Join(tabled(lines), "\n"))
		}
	}
	if len(blocks) == 0 {
		return noPassages
	}
	return strings.Join(blocks, "\n\n")
}

// led: text's first line is led by a section marker.
func led(text string) bool {
	line := firstLine(text)
	return strings.HasPrefix(line, "[") && lastMarker(line) != ""
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
// lines (a blank line ends a document's block), without the lines that
// only repeat the document's title (a file's first line, 「员工年度健康体检
// 通知（2026年）」: its title line names it already).
func compactLines(text, title string) string {
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !repeatsTitle(l, title) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// titleSlack is how many characters a line may add to a document's title
// (a year, 「（内部）」) and still be only its title.
const titleSlack = 8

// repeatsTitle: line is title, perhaps with a year or a note, or the
// text left of an ellipsis that cut it.
func repeatsTitle(line, title string) bool {
	l := strings.Trim(line, ellipsis)
	return title != "" && strings.Contains(l, title) && runes(l) <= runes(title)+titleSlack
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

// ordinal is a heading's number (一、 第七章 3.2): it places a section
// in its document, which the model does not need.
var ordinal = regexp.MustCompile(`^(第[一二三四五六七八九十百零〇0-9]+[章节条篇部分]+\s*|[一二三四五六七八九十]+、\s*|\d+(\.\d+)*[、.]?\s+)`)

// unnumbered is line with its section marker's ordinal left out
// (「[四、病假] …」 → 「[病假] …」).
func unnumbered(line string) string {
	h := lastMarker(line)
	if h == "" || !strings.HasPrefix(line, marker(h)) {
		return line
	}
	if short := ordinal.ReplaceAllString(h, ""); short != "" {
		return marker(short) + line[len(marker(h)):]
	}
	return line
}
