package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-analyze/charts"
)

// Charts are drawn on the server as inline SVG (go-analyze/charts); the
// page runs no chart script. The title and the legend are the page's
// HTML, not the SVG's: they are in the reader's language, often Chinese,
// and the library would measure their width with a font that has no CJK
// glyphs (gateway/reports embeds one for its PNGs; a browser has its
// own). The SVG holds only the axes, whose labels are times and numbers.
// Below each chart a table gives the exact numbers.

// Chart size in CSS pixels; the SVG scales to the page's width.
const (
	chartWidth  = 960
	chartHeight = 300
)

// series is one named line (or bar) of a chart, a value per bucket.
// Color, when set, is the series' fixed color (colorByMeaning); otherwise
// it takes the palette's next.
type series struct {
	Key, Name string // Key: what the series is of (an account, a stop reason), for the drill-down
	Values    []float64
	Color     *charts.Color
}

// chartKind is how a chart is drawn.
type chartKind int

const (
	lineChart chartKind = iota
	stackedBars
)

// valueKind is what a chart's numbers are: how a table cell writes one,
// and whether they are counts (whole-number ticks on the axis).
type valueKind struct {
	cell  func(float64) string
	whole bool
}

var (
	counts   = valueKind{cell: count, whole: true}
	millisec = valueKind{cell: millis}
	percents = valueKind{cell: percent}
)

// chartAxis is a chart's buckets: the axis labels (most empty, so that
// none meet), each bucket's full name for the table, the table's first
// column, and each bucket's start for the drill-down links.
type chartAxis struct {
	Labels, Names []string
	Column        string
	Starts        []time.Time
	Step          time.Duration
	// Channel and Account are the account the charts are narrowed to.
	Channel, Account string
}

// legendItem is one series in the legend: its name and its color, as CSS
// built from the color's numbers (cssColor): html/template replaces any
// plain string in a style attribute that it cannot prove safe, such as
// the chart library's "rgba(…)", with ZgotmplZ, which left every swatch
// without a color.
type legendItem struct {
	Name  string
	Color template.CSS
}

// chartRow is one bucket in the table under a chart: a cell per column,
// the first the bucket's name.
type chartRow struct {
	bucket int
	Cells  []chartCell
}

// chartCell is one number of a table (or the bucket's name), linked to
// the runs it counts where the chart leads to runs.
type chartCell struct {
	Text, Link string
}

// chartView is one chart as a page shows it: title, SVG, legend and the
// table of its numbers. Rows of only zeros are left out of the table
// (Omitted counts them); Columns 1.. are the series.
type chartView struct {
	ID, Title, Note string
	SVG             template.HTML // empty when there is nothing to draw
	Legend          []legendItem
	Columns         []string
	Rows            []chartRow
	Omitted         int
	// Links are the plot's clickable buckets (the drill-down), left to
	// right; empty for charts that do not lead to runs.
	Links []string
	kind  chartKind
}

// cssColor is an opaque color as CSS: numbers only, so it is safe in a
// style attribute by construction.
func cssColor(c charts.Color) template.CSS {
	return template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))
}

// newChart draws list over the buckets of x; the table has a row per
// bucket with a non-zero value and a column per series.
func newChart(id, title string, kind chartKind, x chartAxis, list []series, vk valueKind) chartView {
	v := chartView{ID: id, Title: title, Columns: []string{x.Column}, kind: kind}
	theme := charts.GetDefaultTheme()
	colors := make([]charts.Color, len(list))
	next := 0
	for i, s := range list {
		if s.Color != nil {
			colors[i] = *s.Color
		} else {
			colors[i] = theme.GetSeriesColor(next)
			next++
		}
		v.Legend = append(v.Legend, legendItem{s.Name, cssColor(colors[i])})
		v.Columns = append(v.Columns, s.Name)
	}
	for i, name := range x.Names {
		row, zero := chartRow{bucket: i, Cells: []chartCell{{Text: name}}}, true
		for _, s := range list {
			row.Cells = append(row.Cells, chartCell{Text: vk.cell(s.Values[i])})
			zero = zero && (s.Values[i] == 0 || math.IsNaN(s.Values[i]))
		}
		if zero {
			v.Omitted++
			continue
		}
		v.Rows = append(v.Rows, row)
	}
	if len(list) > 0 && len(x.Labels) > 0 {
		v.SVG = drawSVG(kind, x.Labels, list, colors, vk.whole)
	}
	return v
}

// textRow is a table row of plain cells.
func textRow(cells ...string) chartRow {
	row := chartRow{Cells: make([]chartCell, len(cells))}
	for i, c := range cells {
		row.Cells[i].Text = c
	}
	return row
}

// runFilter is what a drill-down link narrows the runs list to, besides
// the bucket: an account ("channel / account") or a stop reason.
type runFilter int

const (
	byBucket runFilter = iota
	byAccount
	byStop
)

// drillDown links the plot's buckets and the table's cells to the runs
// list over that bucket (and that series' account or stop reason).
func (v *chartView) drillDown(x chartAxis, list []series, f runFilter) {
	link := func(i int, key string) string {
		q := url.Values{"from": {x.Starts[i].Format(time.RFC3339)}, "to": {x.Starts[i].Add(x.Step).Format(time.RFC3339)}}
		if x.Account != "" { // the charts' own account filter
			q.Set("channel", x.Channel)
			q.Set("account", x.Account)
		}
		switch f {
		case byAccount:
			if ch, acc, ok := strings.Cut(key, accountSep); ok {
				q.Set("channel", ch)
				q.Set("account", acc)
			}
		case byStop:
			q.Set("stop", key)
		}
		return Prefix + "/runs?" + q.Encode()
	}
	v.Links = make([]string, len(x.Starts))
	for i := range x.Starts {
		v.Links[i] = link(i, "")
	}
	v.SVG = withLinks(v.SVG, v.kind, v.Links)
	for _, row := range v.Rows {
		row.Cells[0].Link = link(row.bucket, "")
		for j, s := range list {
			if c := &row.Cells[j+1]; c.Text != "0" && c.Text != "–" && f != byBucket {
				c.Link = link(row.bucket, s.Key)
			}
		}
	}
}

// axisLine finds the x axis in the library's SVG: a horizontal line in the
// axis color, the plot's left and right end and its height.
var axisLine = regexp.MustCompile(`<path d="M (\d+) (\d+)\s*L (\d+) (\d+)" style="stroke-width:1;stroke:rgb\(110,112,121\);fill:none"/>`)

// withLinks lays a transparent link over each bucket of svg's plot,
// links[i] over the i-th, so that a click on a bar or a point opens its
// runs. Bars fill their bucket; a line's points sit on the ticks, first
// and last at the ends. An SVG whose axis is not found is left as it is
// (the table's links remain).
func withLinks(svg template.HTML, kind chartKind, links []string) template.HTML {
	n := len(links)
	if svg == "" || n == 0 {
		return svg
	}
	var x0, x1, y int
	for _, m := range axisLine.FindAllStringSubmatch(string(svg), -1) {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[3])
		y1, _ := strconv.Atoi(m[2])
		y2, _ := strconv.Atoi(m[4])
		if y1 == y2 && b-a > chartWidth/2 {
			x0, x1, y = a, b, y1
			break
		}
	}
	if x1 == 0 {
		return svg
	}
	width, first := float64(x1-x0)/float64(n), float64(x0)
	if kind == lineChart && n > 1 {
		width = float64(x1-x0) / float64(n-1)
		first -= width / 2
	}
	var b strings.Builder
	b.WriteString(`<g class="drill">`)
	for i, l := range links {
		left := max(first+float64(i)*width, float64(x0))
		right := min(first+float64(i+1)*width, float64(x1))
		fmt.Fprintf(&b, `<a href="%s" data-bucket="%d"><rect x="%.1f" y="0" width="%.1f" height="%d" fill="transparent"/></a>`,
			html.EscapeString(l), i, left, right-left, y)
	}
	b.WriteString(`</g></svg>`)
	out, ok := strings.CutSuffix(strings.TrimSpace(string(svg)), "</svg>")
	if !ok {
		return svg
	}
	return template.HTML(out + b.String()) //nolint:gosec // our own links, escaped
}

// accountSep joins a channel and an account in a series' key and name.
const accountSep = " / "

// drawSVG renders the chart's plot. A failure to draw (the library's
// refusal of odd data) leaves the table alone on the page. Every label
// of labels is drawn (most are empty); counts get whole-number ticks;
// lines get a different marker each, so that two series of equal values
// stay visible on top of each other.
func drawSVG(kind chartKind, labels []string, list []series, colors []charts.Color, whole bool) template.HTML {
	values := make([][]float64, len(list))
	for i, s := range list {
		values[i] = make([]float64, len(s.Values))
		for j, v := range s.Values {
			if math.IsNaN(v) { // no value here (a rate of no calls): a gap
				v = charts.GetNullValue()
			}
			values[i][j] = v
		}
	}
	theme := charts.GetDefaultTheme().WithSeriesColors(colors)
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputSVG, Width: chartWidth, Height: chartHeight})
	hidden := charts.LegendOption{Show: charts.Ptr(false)}
	// Bars fill their bucket; a line's points sit on the ticks (withLinks
	// relies on both).
	xAxis := charts.CategoryAxisOption{Labels: labels, LabelCount: len(labels), BoundaryGap: charts.Ptr(kind == stackedBars)}
	// Counts start at zero: an axis from the smallest value misleads.
	yAxis := charts.ValueAxisOption{Min: charts.Ptr(0.0), ValueFormatter: axisValue}
	if whole {
		top, n := wholeTicks(plotMax(kind, values))
		yAxis.Max, yAxis.LabelCount, yAxis.PreferNiceIntervals = charts.Ptr(top), n, charts.Ptr(false)
	}
	var err error
	switch kind {
	case stackedBars:
		opt := charts.NewBarChartOptionWithSeries(charts.NewSeriesListBar(values))
		opt.Theme, opt.Legend, opt.CategoryAxis, opt.ValueAxis, opt.StackSeries = theme, hidden, xAxis, []charts.ValueAxisOption{yAxis}, charts.Ptr(true)
		err = p.BarChart(opt)
	default:
		sl := charts.NewSeriesListLine(values)
		for i := range sl {
			sl[i].Symbol = lineMarkers[i%len(lineMarkers)]
		}
		opt := charts.NewLineChartOptionWithSeries(sl)
		opt.Theme, opt.Legend, opt.XAxis, opt.YAxis = theme, hidden, xAxis, []charts.ValueAxisOption{yAxis}
		err = p.LineChart(opt)
	}
	if err != nil {
		return ""
	}
	svg, err := p.Bytes()
	if err != nil {
		return ""
	}
	// The SVG is the library's drawing of our labels (times) and numbers:
	// no text of a user reaches it.
	return template.HTML(svg) //nolint:gosec // see above
}

// lineMarkers are the lines' markers in turn, largest first, so that a
// smaller one shows inside a larger one where two lines meet.
var lineMarkers = []charts.Symbol{
	{Shape: charts.SymbolCircle, Size: 4.5}, {Shape: charts.SymbolSquare, Size: 3.5},
	{Shape: charts.SymbolDiamond, Size: 3}, {Shape: charts.SymbolDot, Size: 2},
}

// plotMax is the highest point drawn: a bucket's sum for stacked bars.
func plotMax(kind chartKind, values [][]float64) float64 {
	var top float64
	for j := range values[0] {
		var sum float64
		for i := range values {
			v := values[i][j]
			if v == charts.GetNullValue() {
				continue
			}
			if kind == stackedBars {
				sum += v
			} else {
				top = max(top, v)
			}
		}
		top = max(top, sum)
	}
	return top
}

// wholeTicks is a count axis up to at least top: its end and the number
// of ticks (the end included), at a round whole step (1, 2, 5, 10, 20 …)
// with at most 6 ticks, so that no tick is 0.4 of an event.
func wholeTicks(top float64) (end float64, ticks int) {
	top = max(math.Ceil(top), 1)
	step := 1.0
	for i := 0; top/step > 5; i++ {
		step *= []float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50 …
	}
	end = step * math.Ceil(top/step)
	return end, int(end/step) + 1
}

// axisValue writes an axis tick: whole numbers without decimals.
func axisValue(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// count writes a count in a table.
func count(v float64) string { return strconv.FormatInt(int64(v), 10) }

// millis writes a duration in milliseconds in a table.
func millis(v float64) string { return strconv.FormatInt(int64(v), 10) }

// percent writes a rate in a table, "–" for no calls (NaN).
func percent(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}
