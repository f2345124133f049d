package reports

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-analyze/charts"
	"github.com/golang/freetype/truetype"
)

// droidSans is Droid Sans Fallback (Debian fonts-droid-fallback, Apache
// License 2.0): CJK glyphs in one file, so charts need no system fonts.
//
//go:embed fonts/DroidSansFallbackFull.ttf
var droidSans []byte

// Chart types.
const (
	ChartBar  = "bar"
	ChartLine = "line"
	ChartPie  = "pie"
)

// Chart size in pixels: wide enough for a week-by-week axis and legible on
// a phone, where chat clients scale pictures to the screen width.
const (
	ChartWidth  = 800
	ChartHeight = 480
)

// MaxPoints bounds the labels of one chart: more do not read in a chat
// picture (and a table of them would be cut by the channel anyway).
const MaxPoints = 60

// Series is one named row of values, one per label.
type Series struct {
	Name   string
	Values []float64
}

// Chart is the data of one chart.
type Chart struct {
	Type   string // ChartBar, ChartLine or ChartPie
	Title  string
	Labels []string // categories (x axis; pie slices)
	Series []Series // a pie uses the first
}

// ErrBadChart: the chart's data cannot be drawn.
var ErrBadChart = errors.New("reports: bad chart")

// Validate checks that the data fits the type.
func (c Chart) Validate() error {
	switch {
	case c.Type != ChartBar && c.Type != ChartLine && c.Type != ChartPie:
		return fmt.Errorf("%w: type %q: want bar, line or pie", ErrBadChart, c.Type)
	case len(c.Labels) == 0:
		return fmt.Errorf("%w: no labels", ErrBadChart)
	case len(c.Labels) > MaxPoints:
		return fmt.Errorf("%w: %d labels, at most %d", ErrBadChart, len(c.Labels), MaxPoints)
	case len(c.Series) == 0:
		return fmt.Errorf("%w: no series", ErrBadChart)
	}
	for _, s := range c.Series {
		if len(s.Values) != len(c.Labels) {
			return fmt.Errorf("%w: series %q has %d values for %d labels", ErrBadChart, s.Name, len(s.Values), len(c.Labels))
		}
	}
	return nil
}

var cjkFont = sync.OnceValues(func() (*truetype.Font, error) { return truetype.Parse(droidSans) })

// RenderPNG draws c as a ChartWidth×ChartHeight PNG. Errors wrap
// ErrBadChart for data that cannot be drawn.
func RenderPNG(c Chart) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	font, err := cjkFont()
	if err != nil {
		return nil, fmt.Errorf("reports: embedded font: %w", err)
	}
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputPNG, Width: ChartWidth, Height: ChartHeight, Font: font})
	title := charts.TitleOption{Text: c.Title, FontStyle: charts.FontStyle{Font: font, FontSize: 16}}
	names := make([]string, len(c.Series))
	values := make([][]float64, len(c.Series))
	for i, s := range c.Series {
		names[i], values[i] = s.Name, s.Values
	}
	legend := charts.LegendOption{SeriesNames: names, FontStyle: charts.FontStyle{Font: font, FontSize: 12}, Offset: charts.OffsetRight}
	axis := charts.CategoryAxisOption{Labels: c.Labels, LabelFontStyle: charts.FontStyle{Font: font, FontSize: 12}}
	// Counts start at zero: a bar axis from the smallest value misleads.
	values0 := []charts.ValueAxisOption{{Min: charts.Ptr(0.0), ValueFormatter: formatValue,
		LabelFontStyle: charts.FontStyle{Font: font, FontSize: 12}}}
	switch c.Type {
	case ChartBar:
		opt := charts.NewBarChartOptionWithSeries(charts.NewSeriesListBar(values, charts.BarSeriesOption{Names: names}))
		opt.Title, opt.Legend, opt.CategoryAxis, opt.ValueAxis = title, legend, axis, values0
		err = p.BarChart(opt)
	case ChartLine:
		opt := charts.NewLineChartOptionWithSeries(charts.NewSeriesListLine(values, charts.LineSeriesOption{Names: names}))
		opt.Title, opt.Legend, opt.XAxis, opt.YAxis = title, legend, axis, values0
		err = p.LineChart(opt)
	case ChartPie:
		opt := charts.NewPieChartOptionWithData(c.Series[0].Values)
		opt.SeriesList = charts.NewSeriesListPie(c.Series[0].Values, charts.PieSeriesOption{Names: c.Labels})
		legend.SeriesNames = c.Labels
		opt.Title, opt.Legend = title, legend
		err = p.PieChart(opt)
	}
	if err != nil {
		return nil, fmt.Errorf("reports: draw %s chart: %w", c.Type, err)
	}
	return p.Bytes()
}

// Table writes c as a markdown table: a row per label, a column per
// series. The delivery layer adapts it to the channel's dialect.
func Table(c Chart) string {
	var b strings.Builder
	b.WriteString("| " + mdCell(c.Title))
	for _, s := range c.Series {
		b.WriteString(" | " + mdCell(s.Name))
	}
	b.WriteString(" |\n|" + strings.Repeat(" --- |", len(c.Series)+1) + "\n")
	for i, l := range c.Labels {
		b.WriteString("| " + mdCell(l))
		for _, s := range c.Series {
			v := ""
			if i < len(s.Values) {
				v = formatValue(s.Values[i])
			}
			b.WriteString(" | " + v)
		}
		b.WriteString(" |\n")
	}
	return b.String()
}

func mdCell(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "|", "/") }

// formatValue writes whole numbers without decimals (ticket counts, days).
func formatValue(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

// ChartSpec says how a skill's answer becomes a chart: Rows names the
// answer's array of objects, Label the field of each row that labels it,
// Values the numeric fields drawn as series (named by Names, default the
// field names).
type ChartSpec struct {
	Type   string   `json:"type"` // bar, line or pie
	Title  string   `json:"title,omitempty"`
	Rows   string   `json:"rows"`
	Label  string   `json:"label"`
	Values []string `json:"values"`
	Names  []string `json:"names,omitempty"`
}

// chartFrom reads the chart's rows out of the skill's answer.
func chartFrom(cs ChartSpec, data any) (Chart, error) {
	obj, _ := data.(map[string]any)
	rows, ok := obj[cs.Rows].([]any)
	if !ok {
		return Chart{}, fmt.Errorf("%w: the answer has no array %q", ErrBadChart, cs.Rows)
	}
	c := Chart{Type: cs.Type, Title: cs.Title, Series: make([]Series, len(cs.Values))}
	for i, v := range cs.Values {
		c.Series[i].Name = v
		if i < len(cs.Names) {
			c.Series[i].Name = cs.Names[i]
		}
	}
	for _, r := range rows {
		row, _ := r.(map[string]any)
		c.Labels = append(c.Labels, fmt.Sprint(row[cs.Label]))
		for i, v := range cs.Values {
			n, ok := row[v].(float64)
			if !ok {
				return Chart{}, fmt.Errorf("%w: row %q: %q is not a number", ErrBadChart, row[cs.Label], v)
			}
			c.Series[i].Values = append(c.Series[i].Values, n)
		}
	}
	return c, c.Validate()
}
