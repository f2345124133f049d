package channels

import (
	"regexp"
	"strings"
)

// Markdown the model writes, as the dialects without it must see it.
var (
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+`)
	mdBold    = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
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
		text = mdBold.ReplaceAllString(text, "$1$2")
		text = mdHeading.ReplaceAllString(text, "")
		text = mdFence.ReplaceAllString(text, "")
		return tablesToLines(text)
	}
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

// accountNameRE is what an account (app, bot, robot) may be named: it goes
// into callback paths, queue names and log lines.
var accountNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidAccountName reports whether name is lower-case letters, digits and
// '-', at most 63 characters, starting with a letter or digit.
func ValidAccountName(name string) bool { return accountNameRE.MatchString(name) }
