package console

import (
	"fmt"
	"html/template"
	"math"
	"strconv"

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

// chartLabels bounds the x axis labels drawn, so that 168 hourly points
// of a week do not write over each other.
const chartLabels = 12

// series is one named line (or bar) of a chart, a value per label.
type series struct {
	Name   string
	Values []float64
}

// chartKind is how a chart is drawn.
type chartKind int

const (
	lineChart chartKind = iota
	stackedBars
)

// legendItem is one series in the legend: its name and its color, as CSS
// built from the color's numbers (cssColor): html/template replaces any
// plain string in a style attribute that it cannot prove safe, such as
// the chart library's "rgba(…)", with ZgotmplZ, which left every swatch
// without a color.
type legendItem struct {
	Name  string
	Color template.CSS
}

// chartView is one chart as a page shows it: title, SVG, legend and the
// table of its numbers.
type chartView struct {
	ID, Title, Note string
	SVG             template.HTML // empty when there is nothing to draw
	Legend          []legendItem
	Columns         []string
	Rows            [][]string
}

// cssColor is an opaque color as CSS: numbers only, so it is safe in a
// style attribute by construction.
func cssColor(r, g, b uint8) template.CSS {
	return template.CSS(fmt.Sprintf("#%02x%02x%02x", r, g, b))
}

// newChart draws series over labels. format writes one value in the
// table; the table has a row per label and a column per series.
func newChart(id, title, timeColumn string, kind chartKind, labels []string, list []series, format func(float64) string) chartView {
	v := chartView{ID: id, Title: title, Columns: []string{timeColumn}}
	theme := charts.GetDefaultTheme()
	for i, s := range list {
		c := theme.GetSeriesColor(i)
		v.Legend = append(v.Legend, legendItem{s.Name, cssColor(c.R, c.G, c.B)})
		v.Columns = append(v.Columns, s.Name)
	}
	for i, l := range labels {
		row := []string{l}
		for _, s := range list {
			row = append(row, format(s.Values[i]))
		}
		v.Rows = append(v.Rows, row)
	}
	if len(list) > 0 && len(labels) > 0 {
		v.SVG = drawSVG(kind, labels, list)
	}
	return v
}

// drawSVG renders the chart's plot. A failure to draw (the library's
// refusal of odd data) leaves the table alone on the page.
func drawSVG(kind chartKind, labels []string, list []series) template.HTML {
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
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputSVG, Width: chartWidth, Height: chartHeight})
	hidden := charts.LegendOption{Show: charts.Ptr(false)}
	xAxis := charts.CategoryAxisOption{Labels: labels, LabelCount: min(chartLabels, len(labels))}
	// Counts start at zero: an axis from the smallest value misleads.
	yAxis := []charts.ValueAxisOption{{Min: charts.Ptr(0.0), ValueFormatter: axisValue}}
	var err error
	switch kind {
	case stackedBars:
		opt := charts.NewBarChartOptionWithSeries(charts.NewSeriesListBar(values))
		opt.Legend, opt.CategoryAxis, opt.ValueAxis, opt.StackSeries = hidden, xAxis, yAxis, charts.Ptr(true)
		err = p.BarChart(opt)
	default:
		opt := charts.NewLineChartOptionWithSeries(charts.NewSeriesListLine(values))
		opt.Legend, opt.XAxis, opt.YAxis = hidden, xAxis, yAxis
		opt.Symbol = charts.Symbol{Shape: charts.SymbolNone}
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
