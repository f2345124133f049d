package demobackend

import (
	"fmt"
	"net/http"
	"regexp"
)

// payslip is one month's pay summary of a demo employee, in yuan.
type payslip struct {
	Gross, Social, Tax int
}

var payslips = map[string]payslip{
	"zhangsan": {Gross: 18000, Social: 1980, Tax: 652},
	"lisi":     {Gross: 22000, Social: 2420, Tax: 1058},
	"wangwu":   {Gross: 15000, Social: 1650, Tax: 345},
}

var monthRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// payslip answers the signed user's own pay summary. A request that names
// another employee is refused outright, not silently answered about the
// caller: the model asked for someone else's pay, and the employee should
// learn that is not possible.
func (b *Backend) payslip(r request) (int, any) {
	var args struct {
		Month      string `json:"month"`
		EmployeeID string `json:"employee_id"`
	}
	if err := decodeArgs(r.body, &args); err != nil {
		return http.StatusBadRequest, errorBody{"参数不是合法的 JSON"}
	}
	if args.EmployeeID != "" && args.EmployeeID != r.id.UserID {
		return http.StatusForbidden, errorBody{"只能查询本人的工资条，不能查询其他员工（" + args.EmployeeID + "）的工资"}
	}
	if args.Month == "" {
		args.Month = b.opts.Now().AddDate(0, -1, 0).Format("2006-01")
	}
	if !monthRE.MatchString(args.Month) {
		return http.StatusBadRequest, errorBody{"month 的格式是 YYYY-MM，例如 2026-02"}
	}
	u, ok := findUser(r.id.UserID)
	p, hasPay := payslips[r.id.UserID]
	if !ok || !hasPay {
		return http.StatusNotFound, errorBody{fmt.Sprintf("没有找到员工 %s 的工资档案", r.id.UserID)}
	}
	net := p.Gross - p.Social - p.Tax
	return http.StatusOK, map[string]any{
		"user_id": u.ID, "month": args.Month,
		"gross": p.Gross, "social_insurance": p.Social, "income_tax": p.Tax, "net": net,
		"summary": fmt.Sprintf("%s %s 工资：应发 %d 元，社保公积金 %d 元，个税 %d 元，实发 %d 元。",
			u.Name, args.Month, p.Gross, p.Social, p.Tax, net),
	}
}
