package document

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// numClass is how a numeric cell is shown: Excel stores dates as serial
// day numbers and percentages as fractions, which read wrongly in a prompt.
type numClass uint8

const (
	numGeneral numClass = iota
	numDate
	numPercent
)

// classify reads a number format: the built-in ids from ECMA-376 Part 1
// §18.8.30 (14–22 dates and times, 27–36 and 50–58 the East Asian dates,
// 45–47 times, 9–10 percentages), or a custom format code.
func classify(id int, code string, custom bool) numClass {
	if !custom {
		switch {
		case id == 9 || id == 10:
			return numPercent
		case id >= 14 && id <= 22, id >= 27 && id <= 36, id >= 45 && id <= 47, id >= 50 && id <= 58:
			return numDate
		}
		return numGeneral
	}
	// Only the first section (positive numbers) matters; quoted text,
	// escaped characters and [colour]/[locale] brackets are not codes.
	var b strings.Builder
	quoted, bracket := false, false
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case quoted:
			quoted = c != '"'
		case bracket:
			bracket = c != ']'
		case c == '"':
			quoted = true
		case c == '[':
			bracket = true
		case c == '\\' || c == '_' || c == '*':
			i++
		case c == ';':
			i = len(code)
		default:
			b.WriteByte(c)
		}
	}
	f := strings.ToLower(b.String())
	switch {
	case f == "general" || f == "":
		return numGeneral
	case strings.Contains(f, "%"):
		return numPercent
	case strings.ContainsAny(f, "ymdhs"):
		return numDate
	}
	return numGeneral
}

type xlCell struct {
	col   int
	typ   string // t attribute: s, inlineStr, str, b, e, d, n
	style string // s attribute: index into cellXfs
}

// text is the cell as a person reads it in Excel, near enough.
func (c xlCell) text(v string, book *workbook) string {
	switch c.typ {
	case "s":
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err == nil && i >= len(book.strings) && book.partial {
			book.missing = true
		}
		if err != nil || i < 0 || i >= len(book.strings) {
			return ""
		}
		return book.strings[i]
	case "b":
		if strings.TrimSpace(v) == "1" {
			return "TRUE"
		}
		return "FALSE"
	case "inlineStr", "str", "e", "d":
		return v
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return v
	}
	class := numGeneral
	if i, err := strconv.Atoi(c.style); err == nil && i >= 0 && i < len(book.styles) {
		class = book.styles[i]
	}
	switch class {
	case numDate:
		if s, ok := serialDate(f, book.date1904); ok {
			return s
		}
	case numPercent:
		return formatNumber(f*100) + "%"
	}
	return formatNumber(f)
}

// formatNumber drops the binary noise of stored doubles (0.1+0.2 is kept
// as 0.30000000000000004) at Excel's 15 significant digits.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 15, 64)
}

// maxSerial is 9999-12-31, Excel's last date.
const maxSerial = 2958465

// serialDate formats an Excel serial date: whole days since 1899-12-30 in
// the 1900 system (which counts the non-existent 1900-02-29, day 60), or
// since 1904-01-01; the fraction is the time of day.
func serialDate(f float64, date1904 bool) (string, bool) {
	if f < 0 || f > maxSerial {
		return "", false
	}
	days := math.Floor(f)
	secs := math.Round((f - days) * 86400)
	if secs >= 86400 {
		days, secs = days+1, 0
	}
	var t time.Time
	switch {
	case date1904:
		t = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
	case days == 60:
		return withTime("1900-02-29", secs), true
	case days < 60:
		t = time.Date(1899, 12, 31, 0, 0, 0, 0, time.UTC)
	default:
		t = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	}
	t = t.AddDate(0, 0, int(days)).Add(time.Duration(secs) * time.Second)
	switch {
	case days == 0 && !date1904:
		return t.Format("15:04:05"), true
	case secs == 0:
		return t.Format("2006-01-02"), true
	}
	return t.Format("2006-01-02 15:04:05"), true
}

func withTime(date string, secs float64) string {
	if secs == 0 {
		return date
	}
	return date + " " + time.Unix(int64(secs), 0).UTC().Format("15:04:05")
}
