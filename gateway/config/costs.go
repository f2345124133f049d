package config

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
)

// CostsConfig is what the model's tokens cost (costs:), for the console's
// estimate of the model bill. Nothing is charged or limited by it.
type CostsConfig struct {
	// Currency is the code or sign the estimate is shown in, default
	// "CNY". At most 8 letters or signs (CNY, USD, ¥, $).
	Currency string `yaml:"currency"`
	// Models are the prices by model name, as the runs record it
	// (model.name, or the name an account overrides it with). A model
	// without a price is shown with its tokens and no cost.
	Models map[string]ModelPrice `yaml:"models"`
	// Budgets are the monthly model budgets by account, "channel/account"
	// (e.g. wecom/app-hr) → an amount in Currency per calendar month. The
	// console shows each account's share of it spent this month; an alert
	// rule `when: budget` fires before it is spent.
	Budgets map[string]float64 `yaml:"budgets"`
}

// ModelPrice is one model's price in Currency per 1,000,000 tokens, the
// unit providers publish (DashScope, DeepSeek, OpenAI).
type ModelPrice struct {
	Prompt     float64 `yaml:"prompt"`     // per 1,000,000 prompt (input) tokens
	Completion float64 `yaml:"completion"` // per 1,000,000 completion (output) tokens
}

// DefaultCurrency is costs.currency when it is left out.
const DefaultCurrency = "CNY"

// CurrencyOrDefault is Currency, or DefaultCurrency when it is empty.
func (c CostsConfig) CurrencyOrDefault() string {
	if c.Currency == "" {
		return DefaultCurrency
	}
	return c.Currency
}

// Cost is the estimate of prompt and completion tokens of model, and
// whether the model has a price.
func (c CostsConfig) Cost(model string, prompt, completion int64) (float64, bool) {
	p, ok := c.Models[model]
	if !ok {
		return 0, false
	}
	return (float64(prompt)*p.Prompt + float64(completion)*p.Completion) / 1e6, true
}

// currencyRE is what costs.currency may be: a short code or sign, shown
// as it is on every page.
var currencyRE = regexp.MustCompile(`^[\p{L}\p{Sc}]{1,8}$`)

// maxPricedModels bounds costs.models: a price list, not a catalogue;
// maxBudgets bounds costs.budgets likewise.
const (
	maxPricedModels = 100
	maxBudgets      = 200
)

func (c *CostsConfig) validate(bad func(key, format string, args ...any)) {
	if c.Currency != "" && !currencyRE.MatchString(c.Currency) {
		bad("costs.currency", "must be 1 to 8 letters or currency signs (CNY, USD, ¥), got %q", c.Currency)
	}
	if len(c.Models) > maxPricedModels {
		bad("costs.models", "at most %d models, got %d", maxPricedModels, len(c.Models))
	}
	if len(c.Budgets) > maxBudgets {
		bad("costs.budgets", "at most %d accounts, got %d", maxBudgets, len(c.Budgets))
	}
	for _, acc := range slices.Sorted(maps.Keys(c.Budgets)) {
		if ch, name, ok := strings.Cut(acc, "/"); !ok || ch == "" || name == "" || strings.Contains(name, "/") {
			bad("costs.budgets."+acc, "must name an account as channel/account, e.g. wecom/app-hr")
		}
		if v := c.Budgets[acc]; v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			bad("costs.budgets."+acc, "must be a monthly amount above 0 in costs.currency, got %v", v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		p := c.Models[name]
		for _, v := range []struct {
			key string
			v   float64
		}{{"prompt", p.Prompt}, {"completion", p.Completion}} {
			if v.v < 0 || math.IsNaN(v.v) || math.IsInf(v.v, 0) {
				bad("costs.models."+name+"."+v.key, "must be a price of 0 or more per 1,000,000 tokens, got %v", v.v)
			}
		}
	}
}

// Budget is the monthly model budget of account ("channel/account", as
// costs.budgets names it) in Currency, and whether it has one.
func (c CostsConfig) Budget(account string) (float64, bool) {
	b, ok := c.Budgets[account]
	return b, ok
}
