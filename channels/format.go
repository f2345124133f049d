package channels

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Markdown the model writes, as the dialects without it must see it.
var (
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+`)
	mdLink    = regexp.MustCompile(`\[([^\]\n]+)\]\((https?://[^)\s]+)\)`)
	mdImage   = regexp.MustCompile(`!\[([^\]\n]*)\]\((https?://[^)\s]+)\)`)
	mdFence   = regexp.MustCompile("(?m)^```[^\n]*\n?")
	mdTableHR = regexp.MustCompile(`(?m)^\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*\n`)
)

// AdaptMarkdown rewrites a reply written in common markdown for a
// platform's dialect: plain text keeps the words and drops the syntax;
// WeCom's subset loses tables and images, which it does not render.
func AdaptMarkdown(text, dialect string) string {
	switch dialect {
	case DialectStandard:
		return text
	case DialectBasic:
		text = mdImage.ReplaceAllString(text, "[$1]($2)")
		return tablesToLines(text)
	default: // plain text
		text = mdImage.ReplaceAllString(text, "$1 $2")
		text = mdLink.ReplaceAllString(text, "$1 ($2)")
		text = stripBold(text)
		text = mdHeading.ReplaceAllString(text, "")
		text = mdFence.ReplaceAllString(text, "")
		return tablesToLines(text)
	}
}

// stripBold removes the markers of **bold** and __bold__ and keeps the
// words. A marker is a run of exactly two '*' or '_' that does not sit
// between two ASCII letters or digits, so the asterisks of masked numbers
// ("138****5678", "1101**********1234", "1**5") and snake__case stay as
// written; it opens where the next character is not a space and closes,
// later on the same line, where the previous one is not. (A regular
// expression cannot say "a run of exactly two": it read "**5678 和 139**"
// between two masked numbers as bold.)
func stripBold(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.Contains(l, "**") || strings.Contains(l, "__") {
			lines[i] = stripBoldLine(l)
		}
	}
	return strings.Join(lines, "\n")
}

func stripBoldLine(line string) string {
	var marks []int // byte offsets of the two-character markers
	for i := 0; i < len(line); {
		c := line[i]
		if c != '*' && c != '_' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] == c {
			j++
		}
		inWord := i > 0 && j < len(line) && isASCIIAlnum(line[i-1]) && isASCIIAlnum(line[j])
		if j-i == 2 && !inWord {
			marks = append(marks, i)
		}
		i = j
	}
	drop := map[int]bool{}
	for k := 0; k < len(marks); k++ {
		open := marks[k]
		if r, _ := utf8.DecodeRuneInString(line[open+2:]); open+2 == len(line) || unicode.IsSpace(r) {
			continue
		}
		for m := k + 1; m < len(marks); m++ {
			closing := marks[m]
			r, _ := utf8.DecodeLastRuneInString(line[:closing])
			if line[closing] == line[open] && closing > open+2 && !unicode.IsSpace(r) {
				drop[open], drop[closing] = true, true
				k = m
				break
			}
		}
	}
	if len(drop) == 0 {
		return line
	}
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		if drop[i] {
			i++ // and the marker's second character
			continue
		}
		b.WriteByte(line[i])
	}
	return b.String()
}

func isASCIIAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// tablesToLines turns a markdown table into lines of cells joined by " | "
// without the separator row, which reads well where tables are not drawn.
func tablesToLines(text string) string {
	text = mdTableHR.ReplaceAllString(text, "")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "|") && strings.HasSuffix(t, "|") && len(t) > 1 {
			cells := strings.Split(t[1:len(t)-1], "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			lines[i] = strings.Join(cells, " | ")
		}
	}
	return strings.Join(lines, "\n")
}

// fenceReserve is room kept in each part for closing and reopening a code
// fence cut by a split: "\n```" and "```lang\n".
const fenceReserve = 24

// SplitMarkdown is SplitText that never leaves a code fence open across
// parts: a part that ends inside a fence closes it, and the next part
// reopens it with the same info string.
func SplitMarkdown(text string, maxBytes int) []string {
	if !strings.Contains(text, "```") || maxBytes <= 2*fenceReserve {
		return SplitText(text, maxBytes)
	}
	var out []string
	rest := strings.TrimSpace(text)
	for rest != "" {
		parts := SplitText(rest, maxBytes-fenceReserve)
		part := parts[0]
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), part))
		if info, open := openFence(part); open && rest != "" {
			part += "\n```"
			rest = "```" + info + "\n" + rest
		}
		out = append(out, part)
	}
	return out
}

// openFence reports whether text ends inside a code fence, and the info
// string (language) of that fence.
func openFence(text string) (info string, open bool) {
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		if open {
			open, info = false, ""
		} else {
			open, info = true, strings.TrimPrefix(t, "```")
			if len(info) > fenceReserve-8 {
				info = "" // keep the reopened fence within the reserve
			}
		}
	}
	return info, open
}
