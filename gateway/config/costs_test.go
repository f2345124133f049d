package config_test

import (
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/config"
)

func TestCostsPricesAndDefaults(t *testing.T) {
	t.Parallel()
	cfg := parse(t, memoryBase)
	if got := cfg.Costs.CurrencyOrDefault(); got != config.DefaultCurrency {
		t.Errorf("currency left out: %q, want %q", got, config.DefaultCurrency)
	}
	if _, ok := cfg.Costs.Cost("qwen-plus", 1, 1); ok {
		t.Error("a model without a price has a cost")
	}
	cfg = parse(t, memoryBase+"costs:\n  currency: USD\n  models:\n    qwen-plus: {prompt: 0.8, completion: 2}\n")
	cost, ok := cfg.Costs.Cost("qwen-plus", 2_000_000, 1_000_000)
	if !ok || cost != 3.6 || cfg.Costs.CurrencyOrDefault() != "USD" {
		t.Errorf("qwen-plus: %v %v %q, want 3.6 USD", cost, ok, cfg.Costs.CurrencyOrDefault())
	}
}

func TestCostsErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	for yaml, key := range map[string]string{
		"costs:\n  currency: 'US Dollar'\n":                                 "costs.currency",
		"costs:\n  currency: '<b>'\n":                                       "costs.currency",
		"costs:\n  models:\n    qwen-plus: {prompt: -1}\n":                  "costs.models.qwen-plus.prompt",
		"costs:\n  models:\n    qwen-plus: {prompt: 1, completion: .nan}\n": "costs.models.qwen-plus.completion",
	} {
		_, err := config.ParseConfig([]byte(memoryBase+yaml), env(nil))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", yaml, err, key)
		}
	}
}
