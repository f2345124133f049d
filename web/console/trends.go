package console

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-analyze/charts"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// The trends of the overview and the skills page over a period: the last
// hour by minute (during an incident), the last 24 hours by hour, the last
// 7 days in 6-hour buckets, the last 30 days by day (tokens and cost per
// day), from the store's chart queries. Buckets are few enough (at most
// 60) that each bar is wide enough to see and each point can be clicked.

// trendPeriod is one period the charts offer: its span, its bucket, how
// often an axis label is written (every labelEvery buckets) and how.
type trendPeriod struct {
	span, step time.Duration
	labelEvery int
	format     string
}

// trendPeriods are the periods offered, in the order of their links;
// defaultTrend is the one a page opens with.
var (
	trendPeriods = []string{"1h", "24h", "7d", "30d"}
	trendSpecs   = map[string]trendPeriod{
		"1h":  {span: time.Hour, step: time.Minute, labelEvery: 10, format: "15:04"},
		"24h": {span: 24 * time.Hour, step: time.Hour, labelEvery: 3, format: "15:04"},
		"7d":  {span: 7 * 24 * time.Hour, step: 6 * time.Hour, labelEvery: 4, format: "01-02"},
		"30d": {span: 30 * 24 * time.Hour, step: 24 * time.Hour, labelEvery: 5, format: "01-02"},
	}
	defaultTrend = "24h"
)

// trendData is the charts of a page, the period they cover and the
// periods offered (links to Path?trend=), the account they are narrowed
// to ("channel/account", empty: all) and the accounts offered; on the
// overview, the headline above them.
type trendData struct {
	Period, Path string
	Periods      []string
	Account      string
	Accounts     []string
	From, To     string    // the custom form's days
	Invalid      bool      // a custom period could not be read
	Since        time.Time // the first bucket's start, for the drill-down and tests
	Step         time.Duration
	Headline     []headlineFigure
	Charts       []chartView
	Costs        *costsData // overview only
}

// trendWindow is the period a request asks for (?trend=), with its
// buckets ending with the current one, and the days it touches for the
// daily charts, ending with today.
type trendWindow struct {
	Period string
	// From and To are a custom period's days; Invalid says a custom
	// period was asked for and could not be read (the default is shown).
	From, To string
	Invalid  bool
	spec     trendPeriod
	Buckets  store.ChartRange
	Days     store.ChartRange
	starts   []time.Time // each bucket's start
	daily    []time.Time
}

// trendWindowOf is the window r asks for (?trend=, ?account=, and a
// custom period's ?from= and ?to=).
func trendWindowOf(r *request, now time.Time) trendWindow {
	q := r.URL.Query()
	return newTrendWindow(q.Get("trend"), q.Get("account"), q.Get("from"), q.Get("to"), now)
}

// maxCustomDays bounds a custom range: the charts read every run in it.
const maxCustomDays = 92

// customTrend is the period name of a range of days the operator picks
// (?trend=custom&from=YYYY-MM-DD&to=YYYY-MM-DD, both local and included).
const customTrend = "custom"

// customSpec is the bucketing of a custom range of days: hours up to two
// days, quarters of a day up to two weeks, days beyond, about ten labels.
func customSpec(days int) trendPeriod {
	span := time.Duration(days) * 24 * time.Hour
	switch {
	case days <= 2:
		return trendPeriod{span: span, step: time.Hour, labelEvery: 3 * days, format: "01-02 15:04"}
	case days <= 14:
		return trendPeriod{span: span, step: 6 * time.Hour, labelEvery: 4 * ((days + 9) / 10), format: "01-02"}
	default:
		return trendPeriod{span: span, step: 24 * time.Hour, labelEvery: (days + 9) / 10, format: "01-02"}
	}
}

// newTrendWindow is period's window ending now, narrowed to account
// ("channel/account"; anything else: every account). A custom period is
// the days from to to; an unreadable or too long one is the default
// period, with Invalid set for the page to say so.
func newTrendWindow(period, account, from, to string, now time.Time) trendWindow {
	now = now.Local()
	if period == customTrend {
		if w, ok := customWindow(from, to, now); ok {
			w.narrow(account)
			w.daysOf(now)
			return w
		}
		w := newTrendWindow(defaultTrend, account, "", "", now)
		w.Invalid = true
		return w
	}
	spec, ok := trendSpecs[period]
	if !ok {
		period, spec = defaultTrend, trendSpecs[defaultTrend]
	}
	// Buckets of an hour or more start at the operator's local midnight
	// plus whole steps (a 6-hour bucket is 00–06, never 02–08); shorter
	// ones on the minute.
	end := now.Truncate(spec.step).Add(spec.step)
	if spec.step >= time.Hour {
		midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
		end = midnight.Add((now.Sub(midnight)/spec.step + 1) * spec.step)
	}
	w := trendWindow{Period: period, spec: spec, Buckets: store.ChartRange{Since: end.Add(-spec.span), Until: end, Step: spec.step}}
	w.narrow(account)
	for t := w.Buckets.Since; t.Before(end); t = t.Add(spec.step) {
		w.starts = append(w.starts, t)
	}
	w.daysOf(now)
	return w
}

// customWindow is the window of the local days from to to, included.
func customWindow(from, to string, now time.Time) (trendWindow, bool) {
	f, err1 := time.ParseInLocation(time.DateOnly, from, now.Location())
	t, err2 := time.ParseInLocation(time.DateOnly, to, now.Location())
	if err1 != nil || err2 != nil || t.Before(f) {
		return trendWindow{}, false
	}
	end := t.AddDate(0, 0, 1)
	days := int(end.Sub(f).Hours()/24 + 0.5)
	if days > maxCustomDays {
		return trendWindow{}, false
	}
	spec := customSpec(days)
	w := trendWindow{Period: customTrend, From: from, To: to, spec: spec, Buckets: store.ChartRange{Since: f, Until: end, Step: spec.step}}
	for b := f; b.Before(end); b = b.Add(spec.step) {
		w.starts = append(w.starts, b)
	}
	return w, true
}

// narrow sets the account w's charts are narrowed to.
func (w *trendWindow) narrow(account string) {
	w.Buckets.Channel, w.Buckets.Account, _ = strings.Cut(account, "/")
	if w.Buckets.Account == "" {
		w.Buckets.Channel = ""
	}
}

// daysOf sets the local days w's buckets touch, for the daily charts: from
// the one the first bucket falls in to the last one's, or today if sooner.
func (w *trendWindow) daysOf(now time.Time) {
	first, last := w.Buckets.Since, w.Buckets.Until.Add(-time.Nanosecond)
	if now.Before(last) {
		last = now
	}
	day := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, now.Location())
	lastDay := time.Date(last.Year(), last.Month(), last.Day(), 0, 0, 0, 0, now.Location())
	w.Days = store.ChartRange{Since: day, Until: lastDay.AddDate(0, 0, 1), Step: 24 * time.Hour, Channel: w.Buckets.Channel, Account: w.Buckets.Account}
	for d := day; !d.After(lastDay); d = d.AddDate(0, 0, 1) {
		w.daily = append(w.daily, d)
	}
}

// until is the end of what has happened of w: its end, or now if sooner.
func (w trendWindow) until(now time.Time) time.Time {
	if now.Before(w.Buckets.Until) {
		return now
	}
	return w.Buckets.Until
}

// trend is the page's trendData for w, its charts to be added.
func (c *Console) trend(r *request, w trendWindow, path string) (trendData, error) {
	d := trendData{Period: w.Period, Path: path, Periods: trendPeriods, Since: w.Buckets.Since, Step: w.spec.step,
		From: w.From, To: w.To, Invalid: w.Invalid}
	if d.From == "" { // the custom form starts from the period shown
		d.From, d.To = w.Buckets.Since.Format(time.DateOnly), w.until(c.deps.Now()).Format(time.DateOnly)
	}
	if w.Buckets.Account != "" {
		d.Account = w.Buckets.Channel + "/" + w.Buckets.Account
	}
	accounts, err := c.deps.Store.ChartAccounts(r.Context())
	if err != nil {
		return trendData{}, err
	}
	for _, a := range accounts {
		d.Accounts = append(d.Accounts, a.Channel+"/"+a.Account)
	}
	return d, nil
}

// bucketLabels are the axis labels: every labelEvery-th bucket written,
// the others empty, so that no two labels meet on a 960-pixel chart.
func (w trendWindow) bucketLabels() []string {
	out := make([]string, len(w.starts))
	for i, t := range w.starts {
		if i%w.spec.labelEvery == 0 {
			out[i] = t.Format(w.spec.format)
		}
	}
	return out
}

// bucketNames name each bucket in full, for the tables under the charts.
func (w trendWindow) bucketNames() []string {
	out := make([]string, len(w.starts))
	for i, t := range w.starts {
		switch {
		case w.spec.step >= 24*time.Hour:
			out[i] = t.Format("2006-01-02")
		case w.spec.step >= time.Hour:
			out[i] = t.Format("01-02 15:04") + "–" + t.Add(w.spec.step).Format("15:04")
		default:
			out[i] = t.Format("15:04")
		}
	}
	return out
}

// dayAxis is the axis of the daily charts: at most dayLabels days
// labelled, each day named in full in the table.
func (w trendWindow) dayAxis(column string) chartAxis {
	x := chartAxis{Labels: make([]string, len(w.daily)), Names: make([]string, len(w.daily)), Column: column}
	every := (len(w.daily) + dayLabels - 1) / dayLabels
	for i, d := range w.daily {
		x.Names[i] = d.Format("2006-01-02")
		if i%every == 0 {
			x.Labels[i] = d.Format("01-02")
		}
	}
	return x
}

// dayLabels is the most days labelled on a daily chart's axis.
const dayLabels = 10

// grid gathers points into one series per key over the buckets starts:
// add is called with the series' values and the bucket's index.
type grid struct {
	starts map[int64]int
	n      int
	byKey  map[string][]float64
}

func newGrid(starts []time.Time) *grid {
	g := &grid{starts: map[int64]int{}, n: len(starts), byKey: map[string][]float64{}}
	for i, t := range starts {
		g.starts[t.Unix()] = i
	}
	return g
}

// add adds v to key's value at the bucket starting at at; a bucket the
// window does not have (none, by construction) is dropped.
func (g *grid) add(key string, at time.Time, v float64) {
	i, ok := g.starts[at.Unix()]
	if !ok {
		return
	}
	vals := g.byKey[key]
	if vals == nil {
		vals = make([]float64, g.n)
		g.byKey[key] = vals
	}
	vals[i] += v
}

// series are the keys' values, keys sorted, each named by name(key).
func (g *grid) series(name func(string) string) []series {
	out := make([]series, 0, len(g.byKey))
	for _, k := range slices.Sorted(maps.Keys(g.byKey)) {
		out = append(out, series{Key: k, Name: name(k), Values: g.byKey[k]})
	}
	return out
}

func same(s string) string { return s }

// axis is w's buckets as a chart's axis, its table's first column
// named column.
func (w trendWindow) axis(column string) chartAxis {
	return chartAxis{Labels: w.bucketLabels(), Names: w.bucketNames(), Column: column, Starts: w.starts, Step: w.spec.step,
		Channel: w.Buckets.Channel, Account: w.Buckets.Account}
}

// Colors by meaning: a stop reason keeps its color whatever other reasons
// the period has (the palette's order would give failures blue one day and
// green the next), failures red, waiting on the user amber.
var (
	colorDone    = charts.Color{R: 0x3b, G: 0xa2, B: 0x72, A: 0xff}
	colorFailed  = charts.Color{R: 0xd9, G: 0x3f, B: 0x3f, A: 0xff}
	colorLimit   = charts.Color{R: 0xee, G: 0x86, B: 0x2e, A: 0xff}
	colorWaiting = charts.Color{R: 0xe8, G: 0xb9, B: 0x2f, A: 0xff}
	colorOther   = charts.Color{R: 0x8a, G: 0x8f, B: 0x98, A: 0xff}
	stopColors   = map[string]*charts.Color{
		agent.StopFinished: &colorDone, "confirmed": &colorDone, // gateway.StopConfirmed: a confirmed call ran
		agent.StopFatalTool: &colorFailed, agent.StopError: &colorFailed, agent.StopPlanRefused: &colorFailed,
		agent.StopTimeout: &colorLimit, agent.StopMaxSteps: &colorLimit, agent.StopRepeated: &colorLimit, agent.StopIdle: &colorLimit,
		agent.StopNeedsInput: &colorWaiting, agent.StopAwaitingConfirmation: &colorWaiting,
	}
)

// stopColor is a stop reason's color; one Hermes does not know is grey.
func stopColor(reason string) *charts.Color {
	if c, ok := stopColors[reason]; ok {
		return c
	}
	return &colorOther
}

// overviewCharts are the overview's charts over w.
func (c *Console) overviewCharts(r *request, w trendWindow) ([]chartView, error) {
	ctx, t := r.Context(), r.t
	x := w.axis(t["chart_bucket"])
	traffic, err := c.deps.Store.TrafficChart(ctx, w.Buckets)
	if err != nil {
		return nil, err
	}
	g := newGrid(w.starts)
	for _, p := range traffic {
		g.add(p.Channel+accountSep+p.Account, p.At, float64(p.Messages))
	}
	list := g.series(same)
	trafficChart := newChart("chart-traffic", t["chart_traffic"], lineChart, x, list, counts)
	trafficChart.drillDown(x, list, byAccount)
	out := []chartView{trafficChart}

	stops, err := c.deps.Store.StopChart(ctx, w.Buckets)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.starts)
	for _, p := range stops {
		g.add(p.StopReason, p.At, float64(p.Runs))
	}
	list = g.series(func(k string) string { return cmp.Or(t["stop_"+k], k) })
	for i := range list {
		list[i].Color = stopColor(list[i].Key)
	}
	stopChart := newChart("chart-stops", t["chart_stops"], stackedBars, x, list, counts)
	stopChart.drillDown(x, list, byStop)
	out = append(out, stopChart)

	lat, err := c.deps.Store.LatencyChart(ctx, w.Buckets)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.starts)
	for _, p := range lat {
		g.add("1", p.At, float64(p.P50.Milliseconds()))
		g.add("2", p.At, float64(p.P95.Milliseconds()))
	}
	list = g.series(func(k string) string { return map[string]string{"1": "p50", "2": "p95"}[k] })
	latency := newChart("chart-latency", t["chart_latency"], lineChart, x, list, millisec)
	latency.Note = t["chart_latency_note"]
	latency.drillDown(x, list, byBucket)
	out = append(out, latency)

	given, err := c.deps.Store.GivenUpChart(ctx, w.Buckets)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.starts)
	for _, p := range given {
		g.add(p.Channel+accountSep+p.Account, p.At, float64(p.Replies))
	}
	out = append(out, newChart("chart-given-up", t["chart_given_up"], stackedBars, x, g.series(same), counts))

	refused, err := c.deps.Store.RefusalChart(ctx, w.Buckets)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.starts)
	for _, p := range refused {
		g.add(p.Channel+accountSep+p.Account, p.At, float64(p.Refused))
	}
	refusals := newChart("chart-refused", t["chart_refused"], stackedBars, x, g.series(same), counts)
	refusals.Note = t["chart_refused_note"]
	out = append(out, refusals)

	tokens, err := c.deps.Store.TokenChart(ctx, w.Days)
	if err != nil {
		return nil, err
	}
	out = append(out, tokenChart(t, w, tokens, c.deps.Costs))
	ratings, err := c.deps.Store.RatingChart(ctx, w.Days)
	if err != nil {
		return nil, err
	}
	return append(out, ratingChart(t, w, ratings)), nil
}

// ratingChart is the employees' 👍 and 👎 per day as bars (green and red),
// with the share of 👍 per day in the table.
func ratingChart(t map[string]string, w trendWindow, points []store.RatingPoint) chartView {
	up, down := make([]float64, len(w.daily)), make([]float64, len(w.daily))
	days := newGrid(w.daily)
	for _, p := range points {
		if i, ok := days.starts[p.At.Unix()]; ok {
			up[i], down[i] = float64(p.Up), float64(p.Down)
		}
	}
	list := []series{{Key: "up", Name: "👍", Values: up, Color: &colorDone}, {Key: "down", Name: "👎", Values: down, Color: &colorFailed}}
	v := newChart("chart-ratings", t["chart_ratings"], stackedBars, w.dayAxis(t["chart_day"]), list, counts)
	v.Columns = append(v.Columns, t["chart_rating_rate"])
	for i := range v.Rows {
		d := v.Rows[i].bucket
		v.Rows[i].Cells = append(v.Rows[i].Cells, chartCell{Text: percent(100 * up[d] / (up[d] + down[d]))})
	}
	v.Note = t["chart_ratings_note"]
	return v
}

// tokenChart is the tokens per model and day as bars, and a table of each
// day and model with the estimated cost at costs' prices.
func tokenChart(t map[string]string, w trendWindow, points []store.TokenPoint, costs config.CostsConfig) chartView {
	g := newGrid(w.daily)
	for _, p := range points {
		g.add(p.Model, p.At, float64(p.PromptTokens+p.CompletionTokens))
	}
	v := newChart("chart-tokens", t["chart_tokens"], stackedBars, w.dayAxis(t["chart_day"]), g.series(same), counts)
	currency := costs.CurrencyOrDefault()
	v.Columns = []string{t["chart_day"], t["model"], t["runs_count"], t["prompt_tokens"], t["completion_tokens"], t["chart_cost"] + " (" + currency + ")"}
	v.Rows, v.Omitted = nil, 0
	var total float64
	var priced, unpriced bool
	for _, p := range points {
		cost, ok := costs.Cost(p.Model, p.PromptTokens, p.CompletionTokens)
		cell := "–"
		if ok {
			cell, total, priced = strconv.FormatFloat(cost, 'f', 2, 64), total+cost, true
		} else {
			unpriced = true
		}
		v.Rows = append(v.Rows, textRow(p.At.Local().Format("2006-01-02"), p.Model, strconv.Itoa(p.Runs),
			strconv.FormatInt(p.PromptTokens, 10), strconv.FormatInt(p.CompletionTokens, 10), cell))
	}
	if priced {
		v.Rows = append(v.Rows, textRow(t["chart_total"], "", "", "", "", strconv.FormatFloat(total, 'f', 2, 64)))
	}
	if unpriced {
		v.Note = t["chart_unpriced"]
	}
	return v
}

// skillCharts are the skills page's charts over w: calls, error rate and
// p95 per skill, and the breakers' openings with the calls they refused.
func (c *Console) skillCharts(r *request, w trendWindow) ([]chartView, error) {
	points, err := c.deps.Store.SkillChart(r.Context(), w.Buckets)
	if err != nil {
		return nil, err
	}
	openings, err := c.deps.Store.BreakerOpenings(r.Context(), w.Buckets)
	if err != nil {
		return nil, err
	}
	t, x := r.t, w.axis(r.t["chart_bucket"])
	calls, errs, p95 := newGrid(w.starts), newGrid(w.starts), newGrid(w.starts)
	for _, p := range points {
		calls.add(p.Tool, p.At, float64(p.Calls))
		errs.add(p.Tool, p.At, float64(p.Errors))
		p95.add(p.Tool, p.At, float64(p.P95.Milliseconds()))
	}
	rates := calls.series(same)
	for i, s := range rates {
		e, rate := errs.byKey[s.Name], make([]float64, len(s.Values))
		for j, n := range s.Values {
			rate[j] = math.NaN() // no calls: no rate, not 0%
			if n > 0 {
				rate[j] = 100 * e[j] / n
			}
		}
		rates[i].Values = rate
	}
	out := []chartView{
		newChart("chart-skill-calls", t["chart_skill_calls"], lineChart, x, calls.series(same), counts),
		newChart("chart-skill-errors", t["chart_skill_errors"], lineChart, x, rates, percents),
		newChart("chart-skill-p95", t["chart_skill_p95"], lineChart, x, p95.series(same), millisec),
	}
	for i := range out {
		out[i].drillDown(x, nil, byBucket)
	}
	return append(out, breakerChart(t, w, slices.Sorted(maps.Keys(calls.byKey)), points, openings)), nil
}

// breakerChart marks each skill's breaker openings per hour as bars, and
// lists below them every hour and skill whose breaker opened or refused
// calls, with both numbers. The bars count openings and not refused
// calls: one opening refuses every call of its open_for, so the two are
// of different sizes, and the refused calls are already errors in the
// error-rate chart. The series are the skills with calls, in the order
// of the other charts so that a skill has the same color in all four,
// then any skill whose breaker opened without a call of it in the period
// (its failed calls were in runs started before), after them.
func breakerChart(t map[string]string, w trendWindow, called []string, points []store.SkillPoint, openings []store.BreakerOpeningPoint) chartView {
	opened, refused := newGrid(w.starts), newGrid(w.starts)
	for _, p := range openings {
		opened.add(p.Skill, p.At, float64(p.Openings))
	}
	for _, p := range points {
		if p.Refused > 0 {
			refused.add(p.Tool, p.At, float64(p.Refused))
		}
	}
	keys := slices.Clone(called)
	for _, k := range slices.Sorted(maps.Keys(opened.byKey)) {
		if !slices.Contains(called, k) {
			keys = append(keys, k)
		}
	}
	list := make([]series, len(keys))
	for i, k := range keys {
		vals := opened.byKey[k]
		if vals == nil { // called, never opened: zeros
			vals = make([]float64, len(w.starts))
		}
		list[i] = series{Name: k, Values: vals}
	}
	x := w.axis(t["chart_bucket"])
	v := newChart("chart-skill-breaker", t["chart_skill_breaker"], stackedBars, x, list, counts)
	v.Note = t["chart_skill_breaker_note"]
	v.Columns = []string{t["chart_bucket"], t["chart_skill"], t["chart_breaker_openings"], t["chart_breaker_refused"]}
	v.Rows, v.Omitted = nil, 0
	for i, h := range x.Names {
		for _, k := range keys {
			var o, n float64
			if vals := opened.byKey[k]; vals != nil {
				o = vals[i]
			}
			if vals := refused.byKey[k]; vals != nil {
				n = vals[i]
			}
			if o > 0 || n > 0 {
				v.Rows = append(v.Rows, textRow(h, k, count(o), count(n)))
			}
		}
	}
	return v
}
