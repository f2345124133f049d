package config

import (
	"maps"
	"math"
	"regexp"
	"slices"
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

// maxPricedModels bounds costs.models: a price list, not a catalogue.
const maxPricedModels = 100

func (c *CostsConfig) validate(bad func(key, format string, args ...any)) {
	if c.Currency != "" && !currencyRE.MatchString(c.Currency) {
		bad("costs.currency", "must be 1 to 8 letters or currency signs (CNY, USD, ¥), got %q", c.Currency)
	}
	if len(c.Models) > maxPricedModels {
		bad("costs.models", "at most %d models, got %d", maxPricedModels, len(c.Models))
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
