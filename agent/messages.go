package agent

import (
	"fmt"
	"slices"
	"strings"
)

// Messages are every text Run itself shows the chat user: partial answers
// when a run cannot finish, the confirmation request, the plan refusal. They
// live in one place so a deployment can reword them (Options.Messages, from
// YAML messages.agent; Empty is messages.empty); an empty field uses the
// default. Texts for the model are English and not configurable.
type Messages struct {
	// Lead sentences, one per stop reason that is not an answer.
	MaxSteps    string `yaml:"max_steps"`    // the step budget ran out
	Timeout     string `yaml:"timeout"`      // the wall clock ran out
	Repeated    string `yaml:"repeated"`     // the same call was repeated beyond the limit
	Idle        string `yaml:"idle"`         // rounds without a successful call
	FatalTool   string `yaml:"fatal_tool"`   // a tool failed in a way only an administrator can fix
	Error       string `yaml:"error"`        // the model failed
	Canceled    string `yaml:"canceled"`     // the run was interrupted
	PlanRefused string `yaml:"plan_refused"` // the request could not be turned into a plan

	Confirm    string `yaml:"confirm"`     // "回复「确认」以执行：%s"; must contain one %s, the skill's prompt
	NeedsInput string `yaml:"needs_input"` // "%s"; must contain one %s, the backend's question

	Results     string `yaml:"results"`      // heading before the answers of finished subtasks
	Done        string `yaml:"done"`         // "已完成：%s。", %s lists the tools that answered
	Facts       string `yaml:"facts"`        // heading before what the tools established (a ticket number...)
	Failed      string `yaml:"failed"`       // "失败：%s。", %s lists failed tools with why
	NotDone     string `yaml:"not_done"`     // "未完成：%s。", %s lists what is missing
	StoppedAt   string `yaml:"stopped_at"`   // "停在第 %d 步。"
	FinalAnswer string `yaml:"final_answer"` // the missing final answer, last item of NotDone
	Empty       string `yaml:"-"`            // reply when the model finished without any text
	ListSep     string `yaml:"list_sep"`     // separator inside the lists
	Why         string `yaml:"why"`          // "%s（%s）": a failed tool and why

	// Why a tool failed, in Failed.
	FailRefused     string `yaml:"fail_refused"`
	FailUnavailable string `yaml:"fail_unavailable"`
	FailInvalidArgs string `yaml:"fail_invalid_args"`
	FailFatal       string `yaml:"fail_fatal"`
	FailOther       string `yaml:"fail_other"`

	// Answers checked against what ran (verify.go): the honest replies
	// when the model does not correct itself, and the words recognised.
	NotPerformed string   `yaml:"not_performed"`  // the answer claimed an action no tool performed in this run
	NoResult     string   `yaml:"no_result"`      // the answer cited a tool result no tool returned
	OwnDataOnly  string   `yaml:"own_data_only"`  // "…%s…": the person the user named; skills answer for the caller only
	OwnDataLabel string   `yaml:"own_data_label"` // "…%s…": first line of a reply showing personal results, %s their skills' display names
	ClaimVerbs   []string `yaml:"claim_verbs"`    // actions an answer may claim after 已 / 已为你: 提交, 重置 …
	CitePhrases  []string `yaml:"cite_phrases"`   // phrases that cite a tool result: 查询结果, 系统显示 …
	OwnDataWords []string `yaml:"own_data_words"` // words that mark data as the caller's own: 本人, 你自己
	// RefusalWords say someone's data cannot be shown (无法查看): a
	// sentence of an answer naming that person with one of them is
	// honest, not the caller's data relabeled.
	RefusalWords []string `yaml:"refusal_words"`
	// AddressWords address the asker (你, 您): an answer using them over
	// personal results presents them as the asker's own and needs no
	// OwnDataLabel.
	AddressWords []string `yaml:"address_words"`
}

// DefaultMessages returns the Chinese defaults.
func DefaultMessages() Messages {
	return Messages{
		MaxSteps:    "抱歉，这个问题我没能在限定步骤内完成，可以换个问法或把问题拆小一点再试。",
		Timeout:     "抱歉，这个问题处理超时了，请稍后再试。",
		Repeated:    "抱歉，我在重复同一个查询却没有进展，先停在这里。",
		Idle:        "抱歉，连续几次尝试都没有拿到有效结果，先停在这里。",
		FatalTool:   "抱歉，有一个系统的配置或授权出了问题，需要管理员处理，这次没法完成。",
		Error:       "抱歉，处理时出错了，请稍后再试。",
		Canceled:    "抱歉，处理被中断了，请稍后再试。",
		PlanRefused: "抱歉，我没能理解这个请求具体要做什么。请说明想查什么、办什么，以及想要的结果形式，我再试一次。",
		Confirm:     "回复「确认」以执行：%s",
		NeedsInput:  "%s",
		Results:     "已得到的结果：",
		Done:        "已完成：%s。",
		Facts:       "已得到的信息：",
		Failed:      "失败：%s。",
		NotDone:     "未完成：%s。",
		StoppedAt:   "停在第 %d 步。",
		FinalAnswer: "整理最终答复",
		Empty:       "抱歉，我没有得到可以回复的内容，请换个问法再试。",
		ListSep:     "、",
		Why:         "%s（%s）",

		FailRefused:     "请求被拒绝",
		FailUnavailable: "系统暂时不可用",
		FailInvalidArgs: "参数不正确",
		FailFatal:       "配置或授权有误",
		FailOther:       "出错",

		NotPerformed: "抱歉，这件事还没有办理：这次没有执行任何操作。如需办理，请再说一次具体要求。",
		NoResult:     "抱歉，我没能从系统拿到相关结果，这次无法给出答复。请稍后再试，或换个问法。",
		OwnDataOnly:  "我只能查看你本人的数据，无法查看%s的。如需了解你自己的情况，可以直接问我。",
		OwnDataLabel: "以下是你本人的%s：",
		ClaimVerbs: []string{"提交", "重置", "预约", "预订", "订好", "取消", "撤销", "撤回", "申请", "创建", "发送", "办理", "登记",
			"催办", "关闭", "评价", "解锁", "续期", "修改", "开通", "报修", "删除", "安排"},
		CitePhrases:  []string{"查询结果", "系统显示", "系统返回", "根据系统", "系统记录", "记录显示", "查询到", "查到"},
		OwnDataWords: []string{"本人", "你自己", "您自己"},
		RefusalWords: []string{"无法查看", "无法查询", "无法显示", "无法提供", "不能查看", "不能查询", "不能显示", "不能提供", "查不到", "看不到",
			"无权", "没有权限"},
		AddressWords: []string{"你", "您"},
	}
}

// withDefaults fills empty fields from DefaultMessages.
func (m Messages) withDefaults() Messages {
	d := DefaultMessages()
	for _, f := range []struct {
		got *string
		def string
	}{
		{&m.MaxSteps, d.MaxSteps}, {&m.Timeout, d.Timeout}, {&m.Repeated, d.Repeated}, {&m.Idle, d.Idle},
		{&m.FatalTool, d.FatalTool}, {&m.Error, d.Error}, {&m.Canceled, d.Canceled},
		{&m.PlanRefused, d.PlanRefused}, {&m.Confirm, d.Confirm}, {&m.NeedsInput, d.NeedsInput},
		{&m.Results, d.Results}, {&m.Done, d.Done}, {&m.Facts, d.Facts}, {&m.Failed, d.Failed}, {&m.NotDone, d.NotDone},
		{&m.StoppedAt, d.StoppedAt}, {&m.FinalAnswer, d.FinalAnswer}, {&m.Empty, d.Empty},
		{&m.ListSep, d.ListSep}, {&m.Why, d.Why}, {&m.FailRefused, d.FailRefused},
		{&m.FailUnavailable, d.FailUnavailable}, {&m.FailInvalidArgs, d.FailInvalidArgs},
		{&m.FailFatal, d.FailFatal}, {&m.FailOther, d.FailOther},
		{&m.NotPerformed, d.NotPerformed}, {&m.NoResult, d.NoResult}, {&m.OwnDataOnly, d.OwnDataOnly},
		{&m.OwnDataLabel, d.OwnDataLabel},
	} {
		if *f.got == "" {
			*f.got = f.def
		}
	}
	for _, f := range []struct{ got, def *[]string }{
		{&m.ClaimVerbs, &d.ClaimVerbs}, {&m.CitePhrases, &d.CitePhrases}, {&m.OwnDataWords, &d.OwnDataWords},
		{&m.AddressWords, &d.AddressWords}, {&m.RefusalWords, &d.RefusalWords},
	} {
		if *f.got == nil { // an empty list turns the check off
			*f.got = *f.def
		}
	}
	return m
}

// lead returns the first sentence for a stop reason.
func (m Messages) lead(stop string) string {
	return map[string]string{
		StopMaxSteps: m.MaxSteps, StopTimeout: m.Timeout, StopRepeated: m.Repeated, StopIdle: m.Idle,
		StopFatalTool: m.FatalTool, StopCanceled: m.Canceled, StopPlanRefused: m.PlanRefused,
	}[stop]
}

// partial is the honest short answer for a run that did not finish: why it
// stopped, the answers of finished subtasks, which tools answered and which
// failed, what is missing and at which step it stopped. Tool output appears
// only as subtask answers the model wrote and as the short facts a
// successful call established (writes.go), already sanitised and masked.
func (m Messages) partial(stop string, p progress, subs []SubtaskResult, step int) string {
	var b strings.Builder
	lead := m.lead(stop)
	if lead == "" {
		lead = m.Error
	}
	b.WriteString(lead)
	var missing []string
	var answered []string
	for _, s := range subs {
		if s.Status == SubtaskDone && s.Answer != "" {
			answered = append(answered, fmt.Sprintf("%s：%s", s.Task, s.Answer))
		} else {
			missing = append(missing, s.Task)
		}
	}
	if len(answered) > 0 {
		b.WriteString("\n" + m.Results + "\n" + strings.Join(answered, "\n") + "\n")
	}
	if len(p.done) > 0 {
		b.WriteString(fmt.Sprintf(m.Done, strings.Join(p.done, m.ListSep)))
	}
	if len(p.facts) > 0 {
		b.WriteString("\n" + m.Facts + "\n- " + strings.Join(p.facts, "\n- ") + "\n")
	}
	if len(p.failed) > 0 {
		var items []string
		for _, f := range p.failed {
			items = append(items, fmt.Sprintf(m.Why, f.tool, f.why))
		}
		b.WriteString(fmt.Sprintf(m.Failed, strings.Join(items, m.ListSep)))
	}
	if len(missing) == 0 {
		missing = []string{m.FinalAnswer}
	}
	b.WriteString(fmt.Sprintf(m.NotDone, strings.Join(missing, m.ListSep)))
	if step > 0 {
		b.WriteString(fmt.Sprintf(m.StoppedAt, step))
	}
	return b.String()
}

// progress tracks which tools answered and which did not, by display name,
// in first use order, and the facts their answers established.
type progress struct {
	done   []string     // answered at least once
	failed []failedTool // failed and never answered
	facts  []string     // "display name：fact", see writes.go
}

type failedTool struct {
	tool, why string
}

func (p *progress) record(tool string, ok bool, why string) {
	switch {
	case ok:
		p.failed = slices.DeleteFunc(p.failed, func(f failedTool) bool { return f.tool == tool })
		if !slices.Contains(p.done, tool) {
			p.done = append(p.done, tool)
		}
	case slices.Contains(p.done, tool):
	default:
		i := slices.IndexFunc(p.failed, func(f failedTool) bool { return f.tool == tool })
		if i < 0 {
			p.failed = append(p.failed, failedTool{tool: tool, why: why})
		} else {
			p.failed[i].why = why // the latest reason is the one that stopped us
		}
	}
}
