package console

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"
)

// The overview's costs: the period's model bill by account and by the
// asker's department, and each account's spending this calendar month
// (the operator's time zone) against its costs.budgets.

// budgetWarning is the share of a budget at which the console marks it:
// the same 80% an alert rule would typically watch.
const budgetWarning = 80.0

// costRow is one account or department in the costs tables.
type costRow struct {
	Name               string
	Runs               int
	Cost               string
	Month, Budget, Use string // accounts only; "–" without a budget
	Over               bool   // Use at or past budgetWarning
}

// costsData are the costs tables of the overview.
type costsData struct {
	Currency    string
	Accounts    []costRow
	Departments []costRow
	Unpriced    bool // some model has no price: its tokens cost nothing here
}

func (c *Console) costs(r *request, w trendWindow, now time.Time) (*costsData, error) {
	period := w.Buckets
	period.Until = w.until(now)
	byAccount, err := c.deps.Store.TokensByAccount(r.Context(), period)
	if err != nil {
		return nil, err
	}
	local := now.Local()
	month := period
	month.Since, month.Until = time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, time.Local), now
	monthByAccount, err := c.deps.Store.TokensByAccount(r.Context(), month)
	if err != nil {
		return nil, err
	}
	byDept, err := c.deps.Store.TokensByDepartment(r.Context(), period)
	if err != nil {
		return nil, err
	}
	costs := c.deps.Costs
	d := &costsData{Currency: costs.CurrencyOrDefault()}
	sum := map[string]*costTotal{}
	add := func(key string, runs int, model string, prompt, completion int64) {
		t := sum[key]
		if t == nil {
			t = &costTotal{}
			sum[key] = t
		}
		t.runs += runs
		if v, ok := costs.Cost(model, prompt, completion); ok {
			t.cost += v
		} else if prompt+completion > 0 {
			d.Unpriced = true
		}
	}
	for _, a := range byAccount {
		add("a:"+a.Channel+"/"+a.Account, a.Runs, a.Model, a.Prompt, a.Completion)
	}
	for _, a := range monthByAccount {
		add("m:"+a.Channel+"/"+a.Account, 0, a.Model, a.Prompt, a.Completion)
	}
	for _, dp := range byDept {
		add("d:"+dp.Department, dp.Runs, dp.Model, dp.Prompt, dp.Completion)
	}
	accounts := map[string]bool{}
	for k := range sum {
		if k[0] == 'a' || k[0] == 'm' {
			accounts[k[2:]] = true
		}
	}
	for acc := range costs.Budgets {
		if period.Account == "" || acc == period.Channel+"/"+period.Account {
			accounts[acc] = true
		}
	}
	for _, acc := range slices.Sorted(maps.Keys(accounts)) {
		cur, mon := sum["a:"+acc], sum["m:"+acc]
		row := costRow{Name: acc, Cost: money(cur), Month: money(mon), Budget: "–", Use: "–"}
		if cur != nil {
			row.Runs = cur.runs
		}
		if b, ok := costs.Budget(acc); ok {
			used := 100 * cmp.Or(mon, &costTotal{}).cost / b
			row.Budget, row.Use, row.Over = strconv.FormatFloat(b, 'f', 2, 64), strconv.FormatFloat(used, 'f', 1, 64)+"%", used >= budgetWarning
		}
		d.Accounts = append(d.Accounts, row)
	}
	for _, k := range slices.Sorted(maps.Keys(sum)) {
		if k[0] == 'd' && k != "d:" {
			d.Departments = append(d.Departments, costRow{Name: k[2:], Runs: sum[k].runs, Cost: money(sum[k])})
		}
	}
	if t, ok := sum["d:"]; ok { // runs without a known department, last
		d.Departments = append(d.Departments, costRow{Name: r.t["costs_no_department"], Runs: t.runs, Cost: money(t)})
	}
	return d, nil
}

// costTotal adds up runs and their cost.
type costTotal struct {
	runs int
	cost float64
}

// money writes t's cost, 0.00 for none.
func money(t *costTotal) string {
	if t == nil {
		return "0.00"
	}
	return strconv.FormatFloat(t.cost, 'f', 2, 64)
}
