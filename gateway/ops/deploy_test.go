package ops

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// metricNames are the names of every series NewMetrics exposes, with the
// _bucket, _sum and _count of each (any metric may be a histogram).
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry(), Sources{})
	names := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range m.collectors(Sources{}) {
		ch := make(chan *prometheus.Desc, 256)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if sub := fqName.FindStringSubmatch(d.String()); sub != nil {
				for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
					names[sub[1]+suffix] = true
				}
			}
		}
	}
	if !names["hermes_callbacks_total"] || !names["process_resident_memory_bytes"] {
		t.Fatalf("metric names read wrong: %v", names)
	}
	return names
}

// usedMetric finds the metric names in a PromQL expression: Hermes's own,
// the Go runtime's and the process's (up is Prometheus's).
var usedMetric = regexp.MustCompile(`\b(?:hermes|go|process)_[a-z_]+\b`)

// TestDeployedRulesAndDashboardUseOnlyExistingMetrics: every metric the
// shipped Prometheus alert rules and Grafana dashboard query is one
// /metrics exposes, so a renamed metric cannot leave a panel empty or an
// alert silent; both files parse.
func TestDeployedRulesAndDashboardUseOnlyExistingMetrics(t *testing.T) {
	names := metricNames(t)
	var exprs []string

	raw, err := os.ReadFile("../../deploy/prometheus/hermes-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("a rule without a name or expression: %+v", r)
			}
			exprs = append(exprs, r.Expr)
		}
	}

	raw, err = os.ReadFile("../../deploy/grafana/hermes-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}

	if len(exprs) < 20 {
		t.Fatalf("only %d expressions read", len(exprs))
	}
	var used []string
	for _, e := range exprs {
		for _, name := range usedMetric.FindAllString(e, -1) {
			used = append(used, name)
			if !names[name] {
				t.Errorf("%q uses %s, which /metrics does not expose", strings.TrimSpace(e), name)
			}
		}
	}
	for _, want := range []string{"hermes_queue_oldest_available_seconds", "hermes_skill_breaker_state", "hermes_deliveries_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("neither file uses %s", want)
		}
	}
}
