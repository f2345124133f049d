package alerts

import (
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
)

// TestAlertText: each measure said in the default words, a duration
// rounded to the millisecond and a whole-hour window in hours.
func TestAlertText(t *testing.T) {
	t.Parallel()
	s := &Service{gw: gateway.Services{Config: &config.Config{Alerts: config.AlertsConfig{Messages: config.DefaultAlertMessages},
		Costs: config.CostsConfig{Currency: "CNY"}}}}
	for _, tc := range []struct {
		r    config.AlertRule
		v    float64
		want string
	}{
		{config.AlertRule{Name: "慢", When: config.AlertAnswerP95, Above: "30s", Window: time.Hour}, 42.12345,
			"【Hermes 告警】慢：最近 1 小时 回答用时 p95为 42.123s，超过阈值 30s。"},
		{config.AlertRule{Name: "失败", When: config.AlertRunsFailed, Above: "3", Window: 10 * time.Minute}, 7,
			"【Hermes 告警】失败：最近 10 分钟 失败的运行数为 7，超过阈值 3。"},
		{config.AlertRule{Name: "假期技能", When: config.AlertSkillErrorRate, Above: "20%", Window: 10 * time.Minute}, 37.5,
			"【Hermes 告警】假期技能：最近 10 分钟 技能调用失败率为 37.5%，超过阈值 20%。"},
		{config.AlertRule{Name: "费用", When: config.AlertCostPerDay, Above: "300", Window: 24 * time.Hour}, 312.456,
			"【Hermes 告警】费用：最近 24 小时 模型费用为 312.46 CNY，超过阈值 300 CNY。"},
		{config.AlertRule{Name: "没人说话", When: config.AlertNoTraffic, Window: 30 * time.Minute}, 1,
			"【Hermes 告警】没人说话：工作时间内已有 30 分钟 没有收到任何消息，请检查各平台的回调和长连接。"},
	} {
		if got := s.text(tc.r, tc.v); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.r.Name, got, tc.want)
		}
	}
}
