package console

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// The trends of the overview and the skills page: the last 24 hours or 7
// days in hourly buckets (tokens and cost per day), from the store's chart
// queries.

// trendPeriods are the periods the charts offer; the first is the default.
var trendPeriods = []string{"24h", "7d"}

// trendSpans are their lengths in hours.
var trendSpans = map[string]int{"24h": 24, "7d": 7 * 24}

// trendData is the charts of a page, the period they cover and the
// periods offered (links to Path?trend=).
type trendData struct {
	Period, Path string
	Periods      []string
	Charts       []chartView
}

// trendWindow is the period a request asks for (?trend=), with its hourly
// buckets ending with the current hour, and the days it touches for the
// daily charts, ending with today.
type trendWindow struct {
	Period string
	Hours  store.ChartRange
	Days   store.ChartRange
	hourly []time.Time // each bucket's start
	daily  []time.Time
}

func newTrendWindow(period string, now time.Time) trendWindow {
	if _, ok := trendSpans[period]; !ok {
		period = trendPeriods[0]
	}
	n := trendSpans[period]
	now = now.Local()
	end := now.Truncate(time.Hour).Add(time.Hour)
	w := trendWindow{Period: period, Hours: store.ChartRange{Since: end.Add(-time.Duration(n) * time.Hour), Until: end, Step: time.Hour}}
	for t := w.Hours.Since; t.Before(end); t = t.Add(time.Hour) {
		w.hourly = append(w.hourly, t)
	}
	// Days are local days (the operator's), from the one the first hour
	// falls in; the current day runs until now.
	first := w.Hours.Since
	day := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, now.Location())
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	w.Days = store.ChartRange{Since: day, Until: today.AddDate(0, 0, 1), Step: 24 * time.Hour}
	for d := day; !d.After(today); d = d.AddDate(0, 0, 1) {
		w.daily = append(w.daily, d)
	}
	return w
}

// hourLabels are the hourly buckets' labels: the hour, with the date at
// midnight and for a week.
func (w trendWindow) hourLabels() []string {
	out := make([]string, len(w.hourly))
	for i, t := range w.hourly {
		if w.Period == "24h" && t.Hour() != 0 {
			out[i] = t.Format("15:04")
		} else {
			out[i] = t.Format("01-02 15:04")
		}
	}
	return out
}

func (w trendWindow) dayLabels() []string {
	out := make([]string, len(w.daily))
	for i, d := range w.daily {
		out[i] = d.Format("2006-01-02")
	}
	return out
}

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
		out = append(out, series{Name: name(k), Values: g.byKey[k]})
	}
	return out
}

func same(s string) string { return s }

// overviewCharts are the overview's charts over w.
func (c *Console) overviewCharts(r *request, w trendWindow) ([]chartView, error) {
	ctx, t := r.Context(), r.t
	hours := w.hourLabels()
	traffic, err := c.deps.Store.TrafficChart(ctx, w.Hours)
	if err != nil {
		return nil, err
	}
	g := newGrid(w.hourly)
	for _, p := range traffic {
		g.add(p.Channel+" / "+p.Account, p.At, float64(p.Messages))
	}
	out := []chartView{newChart("chart-traffic", t["chart_traffic"], t["chart_hour"], lineChart, hours, g.series(same), count)}

	stops, err := c.deps.Store.StopChart(ctx, w.Hours)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.hourly)
	for _, p := range stops {
		g.add(p.StopReason, p.At, float64(p.Runs))
	}
	out = append(out, newChart("chart-stops", t["chart_stops"], t["chart_hour"], stackedBars, hours,
		g.series(func(k string) string { return cmp.Or(t["stop_"+k], k) }), count))

	lat, err := c.deps.Store.LatencyChart(ctx, w.Hours)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.hourly)
	for _, p := range lat {
		g.add("1", p.At, float64(p.P50.Milliseconds()))
		g.add("2", p.At, float64(p.P95.Milliseconds()))
	}
	latency := newChart("chart-latency", t["chart_latency"], t["chart_hour"], lineChart, hours,
		g.series(func(k string) string { return map[string]string{"1": "p50", "2": "p95"}[k] }), millis)
	latency.Note = t["chart_latency_note"]
	out = append(out, latency)

	given, err := c.deps.Store.GivenUpChart(ctx, w.Hours)
	if err != nil {
		return nil, err
	}
	g = newGrid(w.hourly)
	for _, p := range given {
		g.add(p.Channel+" / "+p.Account, p.At, float64(p.Replies))
	}
	out = append(out, newChart("chart-given-up", t["chart_given_up"], t["chart_hour"], stackedBars, hours, g.series(same), count))

	tokens, err := c.deps.Store.TokenChart(ctx, w.Days)
	if err != nil {
		return nil, err
	}
	return append(out, tokenChart(t, w, tokens, c.deps.Costs)), nil
}

// tokenChart is the tokens per model and day as bars, and a table of each
// day and model with the estimated cost at costs' prices.
func tokenChart(t map[string]string, w trendWindow, points []store.TokenPoint, costs config.CostsConfig) chartView {
	g := newGrid(w.daily)
	for _, p := range points {
		g.add(p.Model, p.At, float64(p.PromptTokens+p.CompletionTokens))
	}
	v := newChart("chart-tokens", t["chart_tokens"], t["chart_day"], stackedBars, w.dayLabels(), g.series(same), count)
	currency := costs.CurrencyOrDefault()
	v.Columns = []string{t["chart_day"], t["model"], t["runs_count"], t["prompt_tokens"], t["completion_tokens"], t["chart_cost"] + " (" + currency + ")"}
	v.Rows = nil
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
		v.Rows = append(v.Rows, []string{p.At.Local().Format("2006-01-02"), p.Model, strconv.Itoa(p.Runs),
			strconv.FormatInt(p.PromptTokens, 10), strconv.FormatInt(p.CompletionTokens, 10), cell})
	}
	if priced {
		v.Rows = append(v.Rows, []string{t["chart_total"], "", "", "", "", strconv.FormatFloat(total, 'f', 2, 64)})
	}
	if unpriced {
		v.Note = t["chart_unpriced"]
	}
	return v
}

// skillCharts are the skills page's charts over w: calls, error rate and
// p95 per skill, and the breakers' openings with the calls they refused.
func (c *Console) skillCharts(r *request, w trendWindow) ([]chartView, error) {
	points, err := c.deps.Store.SkillChart(r.Context(), w.Hours)
	if err != nil {
		return nil, err
	}
	openings, err := c.deps.Store.BreakerOpenings(r.Context(), w.Hours)
	if err != nil {
		return nil, err
	}
	t, hours := r.t, w.hourLabels()
	calls, errs, p95 := newGrid(w.hourly), newGrid(w.hourly), newGrid(w.hourly)
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
	return []chartView{
		newChart("chart-skill-calls", t["chart_skill_calls"], t["chart_hour"], lineChart, hours, calls.series(same), count),
		newChart("chart-skill-errors", t["chart_skill_errors"], t["chart_hour"], lineChart, hours, rates, percent),
		newChart("chart-skill-p95", t["chart_skill_p95"], t["chart_hour"], lineChart, hours, p95.series(same), millis),
		breakerChart(t, w, slices.Sorted(maps.Keys(calls.byKey)), points, openings),
	}, nil
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
	opened, refused := newGrid(w.hourly), newGrid(w.hourly)
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
			vals = make([]float64, len(w.hourly))
		}
		list[i] = series{Name: k, Values: vals}
	}
	hours := w.hourLabels()
	v := newChart("chart-skill-breaker", t["chart_skill_breaker"], t["chart_hour"], stackedBars, hours, list, count)
	v.Note = t["chart_skill_breaker_note"]
	v.Columns = []string{t["chart_hour"], t["chart_skill"], t["chart_breaker_openings"], t["chart_breaker_refused"]}
	v.Rows = nil
	for i, h := range hours {
		for _, k := range keys {
			var o, n float64
			if vals := opened.byKey[k]; vals != nil {
				o = vals[i]
			}
			if vals := refused.byKey[k]; vals != nil {
				n = vals[i]
			}
			if o > 0 || n > 0 {
				v.Rows = append(v.Rows, []string{h, k, count(o), count(n)})
			}
		}
	}
	return v
}
