package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hermes-gw/hermes/skills"
)

// The large catalogs of the offering benchmark (issue #22): 100 and 500
// skills built from families of near-duplicates, the way a company's
// catalog grows: one object (假期, VPN, 报修单, 报销 …) with several actions
// (查询, 申请, 取消, 记录, 进度, 催办, 关闭, 评价 …), each written in its
// author's words with the same nouns as its siblings. Generated rather
// than hand-written so 500 stay consistent; the 100-skill catalog is the
// core families, the 500-skill one adds filler families of other office
// objects. Questions are in testdata/catalog_large/questions.json and name
// core skills only, so they hold for both sizes.

// catalogObject is one family: the object, its category (the name's
// prefix), what employees call it, and its actions.
type catalogObject struct {
	cat, slug, cn string
	aliases       []string
	actions       []string
}

// catalogAction is how one action reads in a skill.
type catalogAction struct {
	cn       string // display suffix: 申请, 取消 …
	verbs    []string
	readOnly bool
	desc     string // %[1]s the object, %[2]s its aliases
	params   string
}

const (
	paramsNone    = `{"type":"object","properties":{"period":{"type":"string","description":"时间范围，如 2026-11；不填为当前"}}}`
	paramsHistory = `{"type":"object","properties":{"month":{"type":"string","description":"月份，如 2026-11；不填为近三个月"},` +
		`"page":{"type":"integer","minimum":1,"description":"页码，从 1 开始"}}}`
	paramsStatus = `{"type":"object","properties":{"request_id":{"type":"string","description":"申请单号；不填则查最近一笔"}}}`
	paramsApply  = `{"type":"object","properties":{"start_date":{"type":"string","format":"date","description":"开始日期"},` +
		`"end_date":{"type":"string","format":"date","description":"结束日期"},"reason":{"type":"string","description":"事由"},` +
		`"note":{"type":"string","description":"备注，可不填"}},"required":["reason"],"additionalProperties":false}`
	paramsByID = `{"type":"object","properties":{"request_id":{"type":"string","description":"单号，可先用查询类技能获得"},` +
		`"reason":{"type":"string","description":"原因，可不填"}},"required":["request_id"],"additionalProperties":false}`
	paramsRate = `{"type":"object","properties":{"request_id":{"type":"string","description":"单号"},` +
		`"score":{"type":"integer","minimum":1,"maximum":5,"description":"评分 1-5"},"comment":{"type":"string","description":"评价内容"}},` +
		`"required":["request_id","score"],"additionalProperties":false}`
	paramsSearch = `{"type":"object","properties":{"query":{"type":"string","description":"要查的内容，用员工的原话"}},"required":["query"]}`
	paramsLookup = `{"type":"object","properties":{"name":{"type":"string","description":"同事姓名"},` +
		`"department":{"type":"string","description":"部门，可不填"}},"required":["name"]}`
)

var catalogActions = map[string]catalogAction{
	"query": {cn: "查询", verbs: []string{"查询", "查看"}, readOnly: true, params: paramsNone,
		desc: "查询提问者本人的%[1]s（%[2]s）当前情况。按网关注入的身份返回本人数据；要办理、修改%[1]s时不要用它。"},
	"balance": {cn: "余额", verbs: []string{"余额", "剩余"}, readOnly: true, params: paramsNone,
		desc: "查询提问者本人的%[1]s余额（%[2]s的剩余天数和有效期）。只是问还剩多少时使用；要申请时不要用它。"},
	"history": {cn: "记录", verbs: []string{"记录", "明细", "历史"}, readOnly: true, params: paramsHistory,
		desc: "列出提问者本人过去的%[1]s记录（%[2]s），每条带单号、日期和状态。要看某一笔的进度时用进度查询。"},
	"status": {cn: "进度", verbs: []string{"进度", "状态", "审批"}, readOnly: true, params: paramsStatus,
		desc: "查询提问者本人提交的%[1]s（%[2]s）的处理进度和审批状态。只读；要催办、取消时用对应技能。"},
	"apply": {cn: "申请", verbs: []string{"申请", "办理", "提交"}, params: paramsApply,
		desc: "为提问者提交新的%[1]s申请（%[2]s），提交后进入审批。员工明确要办%[1]s时使用；只是查询时不要用它。"},
	"cancel": {cn: "取消", verbs: []string{"取消", "撤销", "撤回"}, params: paramsByID,
		desc: "撤销提问者本人已提交、尚未办结的%[1]s申请（%[2]s）。员工要取消、撤回时使用；只是查看时不要用它。"},
	"urge": {cn: "催办", verbs: []string{"催办", "催促", "加急"}, params: paramsByID,
		desc: "提醒处理人尽快处理提问者本人的%[1]s（%[2]s），每单每天一次。员工嫌太慢、要加急时使用。"},
	"close": {cn: "关闭", verbs: []string{"关闭", "结单", "完结"}, params: paramsByID,
		desc: "由提问者关闭本人的%[1]s（%[2]s），表示问题已解决、不再需要处理。关闭后不能重新打开。"},
	"rate": {cn: "评价", verbs: []string{"评价", "打分", "满意度"}, params: paramsRate,
		desc: "对已处理完的%[1]s（%[2]s）给出 1-5 分评价和意见，用于考核处理人。只有处理完成后才能评价。"},
	"reset": {cn: "重置", verbs: []string{"重置", "重设", "忘记"}, params: paramsNone,
		desc: "为提问者重置%[1]s（%[2]s），新的凭据发到本人手机。员工忘记或要更换时使用；只是查状态时不要用它。"},
	"unlock": {cn: "解锁", verbs: []string{"解锁", "锁定", "锁了"}, params: paramsNone,
		desc: "为提问者解锁被锁定的%[1]s（%[2]s）。多次输错被锁时使用；忘记密码请用密码重置。"},
	"renew": {cn: "续期", verbs: []string{"续期", "延期", "到期"}, params: paramsApply,
		desc: "为提问者延长即将到期的%[1]s（%[2]s）的有效期。员工说快过期、要延期时使用。"},
	"modify": {cn: "修改", verbs: []string{"修改", "变更", "更新"}, params: paramsApply,
		desc: "修改提问者本人%[1]s（%[2]s）的登记信息，修改后重新审核。员工要变更、更新时使用。"},
	"return": {cn: "归还", verbs: []string{"归还", "退还", "交还"}, params: paramsByID,
		desc: "为提问者办理%[1]s（%[2]s）的归还手续，预约管理员收回。离职或换新时使用。"},
	"search": {cn: "查询", verbs: []string{"规定", "制度", "政策"}, readOnly: true, params: paramsSearch,
		desc: "检索公司%[1]s（%[2]s）的条文并给出原文。员工问公司规定、标准、流程时使用；不查个人数据。"},
	"lookup": {cn: "查询", verbs: []string{"联系方式", "电话", "邮箱"}, readOnly: true, params: paramsLookup,
		desc: "按姓名查同事的%[1]s（%[2]s），只返回公开的工作信息。问某位同事怎么联系时使用。"},
}

// coreObjects are the families of the 100-skill catalog, in the order
// they are cut to 100.
var coreObjects = []catalogObject{
	{"hr", "leave", "假期", []string{"年假", "调休", "病假", "事假", "休假", "请假"}, []string{"balance", "apply", "cancel", "history"}},
	{"hr", "payslip", "工资条", []string{"工资", "薪资", "薪水", "到账", "发薪"}, []string{"query", "history"}},
	{"hr", "tax", "个税", []string{"个人所得税", "扣税", "专项附加扣除", "退税"}, []string{"query", "history", "modify"}},
	{"hr", "social", "社保", []string{"社会保险", "医保", "养老保险", "社保基数"}, []string{"query", "history"}},
	{"hr", "housing", "公积金", []string{"住房公积金", "公积金提取", "公积金缴存"}, []string{"query", "history", "apply"}},
	{"hr", "attendance", "考勤", []string{"打卡", "迟到", "早退", "缺卡", "补卡"}, []string{"query", "apply", "status"}},
	{"hr", "overtime", "加班", []string{"加班申请", "周末加班", "加班时长"}, []string{"apply", "history", "cancel"}},
	{"hr", "certificate", "证明", []string{"在职证明", "收入证明", "开证明"}, []string{"apply", "status"}},
	{"hr", "travel", "出差", []string{"出差申请", "差旅", "外出"}, []string{"apply", "status", "cancel"}},
	{"hr", "training", "培训", []string{"课程", "报名培训", "学习"}, []string{"apply", "history", "cancel"}},
	{"hr", "checkup", "体检", []string{"体检预约", "体检报告", "复查"}, []string{"apply", "query", "cancel"}},
	{"hr", "performance", "绩效", []string{"考核", "绩效评分", "KPI"}, []string{"query", "history"}},
	{"hr", "benefit", "福利", []string{"节日福利", "福利积分", "兑换"}, []string{"query", "apply"}},
	{"hr", "directory", "通讯录", []string{"分机号", "同事电话", "同事邮箱"}, []string{"lookup"}},
	{"hr", "policy", "规章制度", []string{"员工手册", "公司规定", "报销标准"}, []string{"search"}},
	{"it", "vpn", "VPN", []string{"vpn", "远程访问", "外网访问"}, []string{"apply", "reset", "status"}},
	{"it", "password", "密码", []string{"域账号密码", "邮箱密码", "登录密码"}, []string{"reset"}},
	{"it", "account", "账号", []string{"域账号", "OA账号", "登录账号"}, []string{"unlock", "query", "renew"}},
	{"it", "ticket", "IT工单", []string{"工单", "IT报障", "IT问题", "电脑故障"}, []string{"apply", "status", "urge", "close", "rate"}},
	{"it", "software", "软件", []string{"安装软件", "license", "正版软件"}, []string{"apply", "status"}},
	{"it", "asset", "电脑", []string{"笔记本", "显示器", "IT资产"}, []string{"query", "apply", "return"}},
	{"it", "meeting", "会议室", []string{"订会议室", "会议预定", "空会议室"}, []string{"apply", "cancel", "query"}},
	{"it", "mailbox", "邮箱", []string{"邮箱容量", "邮件组", "企业邮箱"}, []string{"query", "apply"}},
	{"it", "wifi", "无线网络", []string{"wifi", "访客网络", "连不上网"}, []string{"apply"}},
	{"admin", "repair", "报修单", []string{"报修", "维修", "坏了", "修理"}, []string{"apply", "status", "urge", "rate", "close"}},
	{"admin", "badge", "门禁卡", []string{"工牌", "门卡", "门禁"}, []string{"apply", "status", "cancel"}},
	{"admin", "parking", "停车位", []string{"车位", "停车", "月租车位"}, []string{"apply", "status", "cancel"}},
	{"admin", "visitor", "访客", []string{"访客预约", "来访", "客人"}, []string{"apply", "cancel", "history"}},
	{"admin", "seal", "用印", []string{"盖章", "公章", "合同章"}, []string{"apply", "status"}},
	{"fin", "expense", "报销", []string{"报销单", "报账", "发票报销", "费用报销"}, []string{"apply", "status", "urge", "cancel", "history"}},
	{"fin", "loan", "借款", []string{"备用金", "预支"}, []string{"apply", "status"}},
	{"fin", "invoice", "开票", []string{"开发票", "发票申请"}, []string{"apply", "status"}},
	{"admin", "express", "快递", []string{"寄快递", "收快递", "包裹"}, []string{"apply", "query"}},
	{"admin", "dorm", "宿舍", []string{"员工宿舍", "住宿"}, []string{"apply", "cancel"}},
	{"admin", "shuttle", "班车", []string{"通勤车", "班车路线"}, []string{"query"}},
	{"hr", "meal", "餐补", []string{"饭补", "加班餐", "餐费"}, []string{"query", "history"}},
	{"hr", "insurance", "商业保险", []string{"补充医疗", "理赔", "商保"}, []string{"query", "apply", "status"}},
	{"hr", "referral", "内推", []string{"推荐候选人", "内推奖金"}, []string{"apply", "status"}},
	{"hr", "resign", "离职", []string{"离职手续", "辞职"}, []string{"apply", "status"}},
}

// fillerObjects grow the catalog to 500: other office objects, each with
// the common actions.
var fillerObjects = strings.Fields(`
hr:onboarding:入职:报到/新员工 hr:regular:转正:试用期 hr:transfer:调岗:转岗/换部门 hr:promotion:晋升:升职/职级
hr:contract:劳动合同:续签/合同到期 hr:archive:人事档案:档案调动 hr:hukou:落户:户口/居住证 hr:award:奖金:年终奖/绩效奖金
hr:option:期权:股票/RSU hr:annuity:企业年金:年金 hr:union:工会:工会会员 hr:club:兴趣社团:社团/俱乐部
hr:exam:内部考试:认证考试 hr:mentor:导师:带教 hr:interview:面试:面试官/候选人 hr:recruit:招聘需求:HC/招人
hr:rent:租房补贴:住房补贴 hr:phonefee:通讯补贴:话费补贴 hr:traffic:交通补贴:打车补贴 hr:child:育儿假:产假/陪产假
hr:wedding:婚假:婚礼 hr:funeral:丧假:丧事 hr:marriage:婚育登记:生育登记 hr:health:健康申报:健康码
it:laptop_repair:电脑维修:电脑坏了 it:monitor:显示器:第二块屏 it:keyboard:键盘鼠标:外设 it:phone:工作手机:手机
it:disk:网盘:云盘/存储空间 it:git:代码仓库:git/仓库权限 it:server:服务器:主机/云主机 it:database:数据库权限:数据库/db
it:domain:域名:DNS it:ssl:SSL证书:https证书 it:printer:打印机:打印/复印 it:projector:投影仪:投屏
it:video:视频会议:腾讯会议/Zoom it:calendar:日程:日历 it:antivirus:杀毒软件:病毒 it:usb:U盘权限:USB
it:firewall:防火墙:端口开通 it:cloud:云资源:云账号 it:jira:项目管理工具:Jira it:wiki:知识库:Wiki/Confluence
it:ci:构建流水线:CI/流水线 it:mfa:双因素认证:MFA/令牌 it:badge_print:工牌打印:胸卡 it:intranet:内网权限:内网
admin:stationery:办公用品:文具/笔记本 admin:desk:工位:座位/换座位 admin:locker:储物柜:柜子 admin:gym:健身房:健身
admin:canteen:食堂:饭卡/食堂卡 admin:gift:礼品:节日礼包 admin:event:团建:团建活动 admin:annual_party:年会:年会节目
admin:car:用车:派车/公务车 admin:ticket_air:机票:航班/订机票 admin:hotel:酒店:订酒店/住宿预订 admin:train:火车票:高铁票
admin:visa:签证:护照 admin:namecard:名片:印名片 admin:clean:保洁:打扫 admin:aircon:空调:温度
admin:water:饮水:桶装水 admin:lostfound:失物招领:丢东西 admin:mailroom:收发室:信件 admin:plant:绿植:花
fin:budget:预算:部门预算 fin:purchase:采购:买东西/采购单 fin:supplier:供应商:供应商准入 fin:payment:付款:对公付款
fin:contract_pay:合同付款:合同款 fin:asset_fin:固定资产:资产卡片 fin:tax_invoice:进项发票:增值税发票 fin:refund:退款:退钱
fin:card:公务卡:信用卡 fin:petty:零星报销:小额报销 fin:bank:工资卡:银行卡变更 fin:audit:审计:内审
law:contract_review:合同审核:法务审核 law:nda:保密协议:NDA law:trademark:商标:知识产权 law:dispute:纠纷:投诉
`)

// fillerActions cycle over the filler families so siblings differ.
var fillerActions = [][]string{
	{"query", "apply", "cancel", "status", "history"},
	{"apply", "status", "urge", "cancel", "history"},
	{"query", "apply", "modify", "status", "history"},
}

// catalogSpec builds one generated skill.
func catalogSpec(o catalogObject, action string) skills.Spec {
	a := catalogActions[action]
	aliases := strings.Join(o.aliases, "、")
	var syn []string
	for _, v := range a.verbs[:1] {
		syn = append(syn, o.cn+v)
		if len(o.aliases) > 0 {
			syn = append(syn, o.aliases[0]+v)
		}
	}
	display := o.cn + a.cn
	return skills.Spec{
		Name:        fmt.Sprintf("%s_%s_%s", o.cat, o.slug, action),
		DisplayName: display,
		Description: fmt.Sprintf(a.desc, o.cn, aliases),
		Parameters:  json.RawMessage(a.params),
		Synonyms:    syn,
		Examples:    []string{fmt.Sprintf("帮我%s一下%s", a.verbs[0], o.cn)},
		ReadOnly:    a.readOnly,
	}
}

// largeCatalogSpecs returns n generated skills: the core families first,
// then filler families.
func largeCatalogSpecs(n int) []skills.Spec {
	var out []skills.Spec
	for _, o := range coreObjects {
		for _, a := range o.actions {
			out = append(out, catalogSpec(o, a))
		}
	}
	for i, f := range fillerObjects {
		p := strings.SplitN(f, ":", 4)
		o := catalogObject{cat: p[0], slug: p[1], cn: p[2], aliases: strings.Split(p[3], "/"), actions: fillerActions[i%len(fillerActions)]}
		for _, a := range o.actions {
			out = append(out, catalogSpec(o, a))
		}
	}
	if len(out) < n {
		panic(fmt.Sprintf("generated catalog has %d skills, want %d", len(out), n))
	}
	return out[:n]
}

// catalogTool is a generated skill with a canned answer; it counts its
// calls so the benchmark can tell whether a skill ran, and whether a
// read-only personal one did (data shown, not an action done).
type catalogTool struct {
	spec     skills.Spec
	calls    *int
	personal *int // nil: not counted
}

func (t catalogTool) Spec() skills.Spec { return t.spec }

func (t catalogTool) Call(context.Context, json.RawMessage) (skills.Result, error) {
	*t.calls++
	if t.personal != nil && isPersonal(t.spec) && t.spec.ReadOnly { // data shown, not an action done

		*t.personal++
	}
	return skills.Result{Status: 200, ContentType: "application/json", Body: []byte(cannedAnswer(t.spec))}, nil
}

// cannedAnswer is a plausible answer of the caller's own record.
func cannedAnswer(s skills.Spec) string {
	switch {
	case !s.ReadOnly:
		return `{"request_id":"R-2031","status":"submitted","summary":"已受理"}`
	case strings.HasSuffix(s.Name, "_status"):
		return `{"request_id":"R-1017","status":"done","status_text":"已处理完成","updated_at":"2026-12-01"}`
	}
	return `{"employee_id":"zhangsan","employee_name":"张三","period":"2026-12","items":[{"request_id":"R-1017","status":"done"}],"total":1}`
}

// largeCatalog binds n generated skills; calls counts every skill call.
func largeCatalog(n int, calls *int) []skills.Tool { return countedCatalog(n, calls, nil) }

// countedCatalog is largeCatalog that also counts the calls of personal
// skills in personal.
func countedCatalog(n int, calls, personal *int) []skills.Tool {
	specs := largeCatalogSpecs(n)
	tools := make([]skills.Tool, len(specs))
	for i, s := range specs {
		tools[i] = catalogTool{spec: s, calls: calls, personal: personal}
	}
	return tools
}
