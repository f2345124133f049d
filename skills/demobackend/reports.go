package demobackend

import (
	"fmt"
	"net/http"
)

// ticketWeek is one week of IT tickets by category, for the weekly report.
type ticketWeek struct {
	Category string `json:"category"`
	Opened   int    `json:"opened"`
	Resolved int    `json:"resolved"`
}

var lastWeekTickets = []ticketWeek{
	{"网络故障", 12, 10}, {"账号权限", 7, 7}, {"硬件报修", 5, 3}, {"软件安装", 9, 8}, {"邮箱问题", 4, 4},
}

// ticketStats answers last week's IT tickets by category. Any signed
// employee may read the totals; a company limits who may with the skill's
// access rules.
func (b *Backend) ticketStats(r request) (int, any) {
	opened, resolved := 0, 0
	for _, w := range lastWeekTickets {
		opened += w.Opened
		resolved += w.Resolved
	}
	end := b.opts.Now().AddDate(0, 0, -int(b.opts.Now().Weekday()))
	start := end.AddDate(0, 0, -6)
	return http.StatusOK, map[string]any{
		"week": start.Format("01-02") + " ~ " + end.Format("01-02"), "categories": lastWeekTickets,
		"opened": opened, "resolved": resolved,
		"summary": fmt.Sprintf("上周共新建工单 %d 张，已解决 %d 张，解决率 %.0f%%。", opened, resolved, 100*float64(resolved)/float64(opened)),
	}
}

// teamLeave answers the leave taken this month by the signed manager's
// team (the demo's team is every demo employee).
func (b *Backend) teamLeave(r request) (int, any) {
	if _, ok := findUser(r.id.UserID); !ok {
		return http.StatusNotFound, errorBody{fmt.Sprintf("没有找到员工 %s", r.id.UserID)}
	}
	type member struct {
		Name      string `json:"name"`
		Dept      string `json:"dept"`
		UsedDays  int    `json:"used_days"`
		RemainDay int    `json:"remaining_days"`
	}
	var team []member
	used := 0
	for _, u := range users {
		team = append(team, member{u.Name, u.Dept, u.AnnualUsed, u.AnnualTotal - u.AnnualUsed})
		used += u.AnnualUsed
	}
	month := b.opts.Now().AddDate(0, -1, 0).Format("2006-01")
	return http.StatusOK, map[string]any{"month": month, "members": team,
		"summary": fmt.Sprintf("%s 团队 %d 人，年假合计已用 %d 天。", month, len(team), used)}
}
