package console

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// The overview's first line: for the chosen period, messages, failure
// rate, answer p95 and cost, each against the period of the same length
// just before it ("slower than yesterday?"). The current period runs from
// the charts' first bucket until now, so both are equally long.

// headlineFigure is one number of the headline and its change.
type headlineFigure struct {
	ID, Label, Value, Change string
	// Worse and Better color the change where its direction has a meaning
	// (failures, answer time); messages and cost are only shown.
	Worse, Better bool
}

// changeMargin is the relative change below which the answer time counts
// as unchanged: p95 moves by a few percent from hour to hour on its own.
const changeMargin = 0.10

func (c *Console) headline(r *request, w trendWindow, now time.Time) ([]headlineFigure, error) {
	cur, prev := w.Buckets, w.Buckets
	cur.Until = w.until(now)
	prev.Since, prev.Until = cur.Since.Add(-cur.Until.Sub(cur.Since)), cur.Since
	curFig, err := c.deps.Store.HeadlineFigures(r.Context(), cur)
	if err != nil {
		return nil, err
	}
	prevFig, err := c.deps.Store.HeadlineFigures(r.Context(), prev)
	if err != nil {
		return nil, err
	}
	return headlineFigures(r.t, curFig, prevFig, c.deps.Costs), nil
}

// headlineFigures compares cur with prev in the words of t.
func headlineFigures(t map[string]string, cur, prev store.Headline, costs config.CostsConfig) []headlineFigure {
	msgs := headlineFigure{ID: "headline-messages", Label: t["headline_messages"], Value: strconv.Itoa(cur.Messages),
		Change: relativeChange(t, float64(cur.Messages), float64(prev.Messages))}

	fail := headlineFigure{ID: "headline-failures", Label: t["headline_failures"], Value: "–", Change: t["headline_no_prior"]}
	if cur.Runs > 0 {
		rate := 100 * float64(cur.Failed) / float64(cur.Runs)
		fail.Value = strconv.FormatFloat(rate, 'f', 1, 64) + "%"
		if prev.Runs > 0 {
			d := rate - 100*float64(prev.Failed)/float64(prev.Runs)
			fail.Change = fmt.Sprintf(t["headline_points"], signed(d, 1))
			fail.Worse, fail.Better = d >= 0.5, d <= -0.5
		}
	}

	p95 := headlineFigure{ID: "headline-p95", Label: t["headline_p95"], Value: "–", Change: t["headline_no_prior"]}
	if cur.Runs > 0 {
		p95.Value = cur.P95.Round(10 * time.Millisecond).String()
		if prev.Runs > 0 {
			p95.Change = relativeChange(t, cur.P95.Seconds(), prev.P95.Seconds())
			rel := (cur.P95.Seconds() - prev.P95.Seconds()) / math.Max(prev.P95.Seconds(), 1e-9)
			p95.Worse, p95.Better = rel > changeMargin, rel < -changeMargin
		}
	}

	cost := headlineFigure{ID: "headline-cost", Label: t["headline_cost"] + " (" + costs.CurrencyOrDefault() + ")", Value: t["headline_unpriced"]}
	if c, ok := periodCost(cur.Tokens, costs); ok {
		cost.Value = strconv.FormatFloat(c, 'f', 2, 64)
		p, _ := periodCost(prev.Tokens, costs)
		cost.Change = relativeChange(t, c, p)
	}
	return []headlineFigure{msgs, fail, p95, cost}
}

// periodCost is the tokens' cost at costs' prices; false when no model of
// them has a price (and there were tokens).
func periodCost(tokens []store.ModelTokens, costs config.CostsConfig) (float64, bool) {
	var sum float64
	priced := len(tokens) == 0
	for _, m := range tokens {
		if c, ok := costs.Cost(m.Model, m.Prompt, m.Completion); ok {
			sum, priced = sum+c, true
		}
	}
	return sum, priced
}

// relativeChange is cur against prev in percent, or that the previous
// period had none.
func relativeChange(t map[string]string, cur, prev float64) string {
	if prev == 0 {
		if cur == 0 {
			return fmt.Sprintf(t["headline_change"], "±0%")
		}
		return t["headline_no_prior"]
	}
	return fmt.Sprintf(t["headline_change"], signed(100*(cur-prev)/prev, 0)+"%")
}

// signed writes v with its sign and digits decimals.
func signed(v float64, digits int) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', digits, 64)
	switch {
	case s == strconv.FormatFloat(0, 'f', digits, 64):
		return "±" + s
	case v < 0:
		return "−" + s
	default:
		return "+" + s
	}
}
