package agent

import (
	"fmt"
	"slices"
	"strings"
)

// Messages are every text Run itself shows the chat user: the partial
// answers when a run cannot finish. They live in one place so a deployment
// can reword them (Options.Messages); an empty field uses the default.
// Texts for the model (tool errors) are English and not configurable.
type Messages struct {
	MaxSteps    string // lead sentence when the step budget ran out
	Timeout     string // lead sentence when the wall clock ran out
	Error       string // lead sentence when the model failed
	Canceled    string // lead sentence when the run was interrupted
	Done        string // "已完成：%s。", %s lists the tools that answered
	NotDone     string // "未完成：%s。", %s lists what is missing
	FinalAnswer string // the missing final answer, last item of NotDone
	Empty       string // reply when the model finished without any text
	ListSep     string // separator inside the lists
}

// DefaultMessages returns the Chinese defaults.
func DefaultMessages() Messages {
	return Messages{
		MaxSteps:    "抱歉，这个问题我没能在限定步骤内完成，可以换个问法或把问题拆小一点再试。",
		Timeout:     "抱歉，这个问题处理超时了，请稍后再试。",
		Error:       "抱歉，处理时出错了，请稍后再试。",
		Canceled:    "抱歉，处理被中断了，请稍后再试。",
		Done:        "已完成：%s。",
		NotDone:     "未完成：%s。",
		FinalAnswer: "整理最终答复",
		Empty:       "抱歉，我没有得到可以回复的内容，请换个问法再试。",
		ListSep:     "、",
	}
}

// withDefaults fills empty fields from DefaultMessages.
func (m Messages) withDefaults() Messages {
	d := DefaultMessages()
	for _, f := range []struct {
		got *string
		def string
	}{
		{&m.MaxSteps, d.MaxSteps}, {&m.Timeout, d.Timeout}, {&m.Error, d.Error},
		{&m.Canceled, d.Canceled}, {&m.Done, d.Done}, {&m.NotDone, d.NotDone},
		{&m.FinalAnswer, d.FinalAnswer}, {&m.Empty, d.Empty}, {&m.ListSep, d.ListSep},
	} {
		if *f.got == "" {
			*f.got = f.def
		}
	}
	return m
}

// lead returns the first sentence for a stop reason.
func (m Messages) lead(stop string) string {
	switch stop {
	case StopMaxSteps:
		return m.MaxSteps
	case StopTimeout:
		return m.Timeout
	case StopCanceled:
		return m.Canceled
	default:
		return m.Error
	}
}

// partial is the honest short answer for a run that did not finish: what
// was looked up and what is missing. It never includes tool output, which
// was meant for the model and may be raw JSON.
func (m Messages) partial(stop string, p progress) string {
	var b strings.Builder
	b.WriteString(m.lead(stop))
	if len(p.done) > 0 {
		b.WriteString(fmt.Sprintf(m.Done, strings.Join(p.done, m.ListSep)))
	}
	b.WriteString(fmt.Sprintf(m.NotDone, strings.Join(append(p.notDone(), m.FinalAnswer), m.ListSep)))
	return b.String()
}

// progress tracks which tools answered and which did not, by name, in first
// use order.
type progress struct {
	done   []string // answered at least once
	failed []string // failed or never ran, and never answered
}

func (p *progress) record(tool string, ok bool) {
	switch {
	case ok:
		p.failed = slices.DeleteFunc(p.failed, func(s string) bool { return s == tool })
		if !slices.Contains(p.done, tool) {
			p.done = append(p.done, tool)
		}
	case !slices.Contains(p.done, tool) && !slices.Contains(p.failed, tool):
		p.failed = append(p.failed, tool)
	}
}

func (p progress) notDone() []string { return slices.Clone(p.failed) }
