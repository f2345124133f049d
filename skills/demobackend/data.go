package demobackend

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/hermes-gw/hermes/skills"
)

// User is a demo employee.
type User struct {
	ID, Name, Dept string
	AnnualTotal    int // annual leave days this year
	AnnualUsed     int
	SickLeft       int
}

var users = []User{
	{ID: "zhangsan", Name: "张三", Dept: "研发部", AnnualTotal: 10, AnnualUsed: 5, SickLeft: 8},
	{ID: "lisi", Name: "李四", Dept: "市场部", AnnualTotal: 15, AnnualUsed: 3, SickLeft: 10},
	{ID: "wangwu", Name: "王五", Dept: "财务部", AnnualTotal: 5, AnnualUsed: 5, SickLeft: 2},
}

// Users returns the demo employees, so a demo can offer to chat as one.
func Users() []User { return slices.Clone(users) }

func findUser(id string) (User, bool) {
	i := slices.IndexFunc(users, func(u User) bool { return u.ID == id })
	if i < 0 {
		return User{}, false
	}
	return users[i], true
}

func (b *Backend) leaveBalance(r request) (int, any) {
	// The body is ignored on purpose: whose balance is decided by the
	// signed identity alone.
	id := r.id
	u, ok := findUser(id.UserID)
	if !ok {
		return http.StatusNotFound, errorBody{fmt.Sprintf("没有找到员工 %s 的假期档案", id.UserID)}
	}
	year := b.opts.Now().Year()
	expires := fmt.Sprintf("%d-12-31", year)
	left := u.AnnualTotal - u.AnnualUsed
	return http.StatusOK, map[string]any{
		"user_id": u.ID,
		"name":    u.Name,
		"year":    year,
		"annual_leave": map[string]any{
			"total_days": u.AnnualTotal, "used_days": u.AnnualUsed, "remaining_days": left, "expires": expires,
		},
		"sick_leave_remaining_days": u.SickLeft,
		"summary": fmt.Sprintf("%s %d 年年假共 %d 天，已用 %d 天，剩余 %d 天（%s 前有效）；病假剩余 %d 天。",
			u.Name, year, u.AnnualTotal, u.AnnualUsed, left, expires, u.SickLeft),
	}
}

type policy struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Summary   string   `json:"summary"`
	Effective string   `json:"effective"`
	keywords  []string // matched against the query
}

var policies = []policy{
	{ID: "HR-001", Title: "年假管理办法", Effective: "2025-01-01",
		Summary:  "入职满一年享 5 天年假，满 10 年 10 天，满 20 年 15 天；当年未休年假可结转至次年 3 月 31 日；请假需提前 3 个工作日在 OA 提交。",
		keywords: []string{"年假", "假期", "休假", "结转", "请假", "leave"}},
	{ID: "HR-002", Title: "病假与医疗期规定", Effective: "2025-01-01",
		Summary:  "病假需提供二级以上医院证明；每年 12 天带薪病假，超出部分按基本工资 80% 发放。",
		keywords: []string{"病假", "医疗", "请假", "sick"}},
	{ID: "FIN-003", Title: "差旅与费用报销制度", Effective: "2025-07-01",
		Summary:  "费用发生后 30 天内在费控系统提交报销，附电子发票；单笔超过 5000 元需部门负责人审批。",
		keywords: []string{"报销", "差旅", "发票", "费用", "expense"}},
	{ID: "HR-004", Title: "加班与调休制度", Effective: "2025-03-01",
		Summary:  "工作日加班可申请等时调休，调休需在 6 个月内使用；法定节假日加班按 3 倍工资支付。",
		keywords: []string{"加班", "调休", "overtime"}},
	{ID: "HR-005", Title: "远程办公规定", Effective: "2025-09-01",
		Summary:  "经直属主管同意，每周可远程办公最多 2 天；远程期间需保持企业微信在线。",
		keywords: []string{"远程", "居家", "在家", "remote"}},
}

func (b *Backend) searchPolicies(r request) (int, any) {
	body := r.body
	var args struct {
		Query string `json:"query"`
	}
	if err := decodeArgs(body, &args); err != nil || strings.TrimSpace(args.Query) == "" {
		return http.StatusBadRequest, errorBody{"需要 query：要检索的关键词"}
	}
	q := strings.ToLower(args.Query)
	var hits []policy
	for _, p := range policies {
		if strings.Contains(q, strings.ToLower(p.Title)) ||
			slices.ContainsFunc(p.keywords, func(k string) bool { return strings.Contains(q, k) }) {
			hits = append(hits, p)
		}
	}
	if len(hits) == 0 {
		return http.StatusOK, map[string]any{"results": []policy{},
			"summary": fmt.Sprintf("没有找到与“%s”相关的制度。", args.Query)}
	}
	titles := make([]string, len(hits))
	for i, p := range hits {
		titles[i] = "《" + p.Title + "》：" + p.Summary
	}
	return http.StatusOK, map[string]any{"results": hits,
		"summary": fmt.Sprintf("找到 %d 条相关制度。%s", len(hits), strings.Join(titles, " "))}
}

type ticket struct {
	ID          string `json:"ticket_id"`
	Owner       string `json:"owner"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Assignee    string `json:"assignee"`
}

// firstFreeTicket follows the seeded tickets' numbers.
const firstFreeTicket = 1004

func seedTickets() []ticket {
	return []ticket{
		{ID: "INC-1001", Owner: "zhangsan", Title: "笔记本连不上 VPN", Description: "在家连接公司 VPN 时提示证书错误。",
			Status: "处理中", Assignee: "IT 服务台 周工"},
		{ID: "INC-1002", Owner: "lisi", Title: "会议室投影仪无法显示", Description: "3 楼大会议室投影仪无信号。",
			Status: "已解决", Assignee: "IT 服务台 吴工"},
		{ID: "INC-1003", Owner: "wangwu", Title: "申请财务系统权限", Description: "需要开通总账模块只读权限。",
			Status: "待审批", Assignee: "财务系统管理员"},
	}
}

func (b *Backend) createTicket(r request) (int, any) {
	id, body := r.id, r.body
	var args struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	}
	if err := decodeArgs(body, &args); err != nil || strings.TrimSpace(args.Title) == "" {
		return http.StatusBadRequest, errorBody{"需要 title：工单标题"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := r.header.Get(skills.HeaderIdempotencyKey)
	if prev, ok := b.created[id.UserID+" "+key]; ok && key != "" {
		i := slices.IndexFunc(b.tickets, func(t ticket) bool { return t.ID == prev })
		t := b.tickets[i]
		return http.StatusOK, map[string]any{"ticket": t,
			"summary": fmt.Sprintf("工单 %s「%s」此前已创建，未重复创建。", t.ID, t.Title)}
	}
	t := ticket{ID: fmt.Sprintf("INC-%d", b.nextID), Owner: id.UserID, Title: args.Title,
		Description: args.Description, Status: "待处理", Assignee: "IT 服务台"}
	b.nextID++
	b.tickets = append(b.tickets, t)
	if key != "" {
		b.created[id.UserID+" "+key] = t.ID
	}
	return http.StatusCreated, map[string]any{"ticket": t,
		"summary": fmt.Sprintf("已创建工单 %s「%s」，当前状态：%s，处理人：%s。", t.ID, t.Title, t.Status, t.Assignee)}
}

func (b *Backend) ticketStatus(r request) (int, any) {
	id, body := r.id, r.body
	var args struct {
		TicketID string `json:"ticket_id"`
	}
	if err := decodeArgs(body, &args); err != nil || args.TicketID == "" {
		return http.StatusBadRequest, errorBody{"需要 ticket_id：工单号，例如 INC-1001"}
	}
	want := strings.ToUpper(strings.TrimSpace(args.TicketID))
	b.mu.Lock()
	i := slices.IndexFunc(b.tickets, func(t ticket) bool { return t.ID == want })
	var t ticket
	if i >= 0 {
		t = b.tickets[i]
	}
	b.mu.Unlock()
	switch {
	case i < 0:
		return http.StatusNotFound, errorBody{fmt.Sprintf("没有找到工单 %s", want)}
	case t.Owner != id.UserID:
		return http.StatusForbidden, errorBody{fmt.Sprintf("工单 %s 不是你提交的，只能查询本人的工单", want)}
	}
	return http.StatusOK, map[string]any{"ticket": t,
		"summary": fmt.Sprintf("工单 %s「%s」当前状态：%s，处理人：%s。", t.ID, t.Title, t.Status, t.Assignee)}
}
