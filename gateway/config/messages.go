package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/hermes-gw/hermes/agent"
)

// Messages are the one catalogue of the words Hermes says (messages:),
// Chinese by default: the pipeline's sentences below, the agent's own
// (Agent), the reports' (Reports) and overrides of the console's interface
// text (Console). Every entry is a YAML key documented in
// hermes.example.yaml; an entry left out takes its default, and a sentence
// must keep its default's verbs (%s, %d), in order.
type Messages struct {
	Unsupported string `yaml:"unsupported"`     // answer to non-text messages
	Failed      string `yaml:"failed"`          // answer when a run fails for good
	Empty       string `yaml:"empty"`           // answer when the model returned nothing (the agent's, too)
	Confirmed   string `yaml:"confirmed"`       // after a confirmed call ran; %s is what ran
	ConfirmFail string `yaml:"confirm_failed"`  // a confirmed call failed; %s what, %s why
	Cancelled   string `yaml:"cancelled"`       // a pending call was cancelled; %s is what
	ConfirmLate string `yaml:"confirm_expired"` // 「确认」 came too late; %s is what
	AsyncDone   string `yaml:"async_done"`      // async result arrived; %s is the result
	AsyncFailed string `yaml:"async_failed"`    // async task failed; %s is the reason
	AsyncLate   string `yaml:"async_timeout"`   // async task never answered; %s is its task id
	Working     string `yaml:"working"`         // progress line while a skill runs; %s skill
	Processing  string `yaml:"processing"`      // sent once when a run passes worker.processing_hint_after
	Queued      string `yaml:"queued"`          // shown while a run waits past model.queued_hint_after
	Welcome     string `yaml:"welcome"`         // answer to a user entering a chat with the bot
	Thinking    string `yaml:"thinking"`        // first content of a streamed answer
	Later       string `yaml:"later"`           // a stream closed at its time limit; the rest follows
	Title       string `yaml:"title"`           // a reply's title where a platform shows one (DingTalk's notification)
	Reset       string `yaml:"reset"`           // after /reset (重置)
	Help        string `yaml:"help"`            // /help (帮助) header; %s lists the skills
	NoSkills    string `yaml:"no_skills"`       // /help when the user may use no skill
	UnknownCmd  string `yaml:"unknown_command"` // an unknown /command; %s is the command

	// ConfirmFallback: a confirmed call did not run (its system is down) and
	// its fallback needs its own 「确认」; %s what did not run, %s the fallback's prompt.
	ConfirmFallback string `yaml:"confirm_fallback"`

	// ConfirmWords confirm a pending call (「确认」); CancelWords cancel it.
	// Compared without surrounding spaces and punctuation, ignoring case.
	ConfirmWords []string `yaml:"confirm_words"`
	CancelWords  []string `yaml:"cancel_words"`
	// ResetCommands and HelpCommands are what a user types, alone on the
	// message, for /reset and /help (any other /word gets unknown_command).
	ResetCommands []string `yaml:"reset_commands"`
	HelpCommands  []string `yaml:"help_commands"`

	// SkillErrors say why a confirmed call failed, in ConfirmFail's why.
	SkillErrors SkillErrorMessages `yaml:"skill_errors"`

	// Agent are the agent's own sentences: a partial answer when a run
	// cannot finish, the confirmation request, the plan refusal.
	// Agent.Empty is Empty (one key, messages.empty).
	Agent agent.Messages `yaml:"agent"`

	// Reports are the sentences of report management (reports.go).
	Reports ReportMessages `yaml:"reports"`

	// Media are the sentences about attachments (media.go).
	Media MediaMessages `yaml:"media"`

	// Memory are the words and sentences of long-term memory (memory.go).
	Memory MemoryMessages `yaml:"memory"`

	// Knowledge are the words of the knowledge base's citations.
	Knowledge KnowledgeMessages `yaml:"knowledge"`

	// Ratings are the words of rating an answer (👍 / 👎).
	Ratings RatingMessages `yaml:"ratings"`

	// Cards are the words of confirmation and choice cards (cards.go).
	Cards CardMessages `yaml:"cards"`

	// Console overrides the operator console's interface text, by language
	// (zh, en) and key, e.g. console: {zh: {title: 某某公司 Hermes}}. The
	// keys are the console's (web/console/texts.go); an unknown one is
	// refused when the console is built, naming it.
	Console map[string]map[string]string `yaml:"console"`
}

// SkillErrorMessages say why a skill call failed, without internals.
type SkillErrorMessages struct {
	Denied      string `yaml:"denied"`      // the user may not use the skill
	Unavailable string `yaml:"unavailable"` // the system is down or timed out
	Other       string `yaml:"other"`       // any other failure without a message of the backend's own
}

// DefaultMessages are the Chinese defaults of Messages.
var DefaultMessages = Messages{
	Unsupported: "暂时只支持文字消息，这类消息我还看不懂，请用文字描述你的问题。",
	Failed:      "抱歉，处理你的消息时出错了，请稍后再试。",
	Empty:       agent.DefaultMessages().Empty,
	Confirmed:   "已执行：%s",
	ConfirmFail: "执行失败：%s。原因：%s",
	Cancelled:   "已取消：%s",
	ConfirmLate: "确认已超时，未执行：%s。如仍需要，请重新发起。",
	AsyncDone:   "你之前提交的请求已处理完成：%s",
	AsyncFailed: "你之前提交的请求处理失败：%s",
	AsyncLate:   "你之前提交的请求（任务 %s）长时间没有结果，已超时。请稍后重试或联系 IT 服务台。",
	Working:     "正在调用 %s …",
	Processing:  "处理中…",
	Queued:      "排队中…",
	Welcome:     "你好，我是 Hermes 智能助手。可以问我年假、工资条、IT 服务等问题，发送 /help 查看我能做什么。",
	Thinking:    "思考中…",
	Later:       "（回复较长，完整内容稍后单独发送）",
	Title:       "回复",
	Reset:       "已开始新的会话，之前的对话不再作为上下文。",
	Help:        "我可以帮你：\n%s\n\n直接用文字提问即可；发送 /reset 开始新的会话。",
	NoSkills:    "你目前没有可用的技能，我只能回答一般性问题。发送 /reset 开始新的会话。",
	UnknownCmd:  "不认识的命令 %s。可用命令：/help（帮助）查看我能做什么，/reset（重置）开始新的会话。",

	ConfirmFallback: "未执行：%s。该系统暂时不可用。可以改用备用方式，回复「确认」以执行：%s",

	ConfirmWords:  []string{"确认"},
	CancelWords:   []string{"取消", "不用了", "算了", "不", "否", "no", "cancel"},
	ResetCommands: []string{"/reset", "重置", "/重置"},
	HelpCommands:  []string{"/help", "帮助", "/帮助"},
	SkillErrors: SkillErrorMessages{
		Denied:      "你没有使用这项功能的权限",
		Unavailable: "系统暂时不可用，请稍后再试",
		Other:       "系统返回了错误",
	},
	Agent:   agent.DefaultMessages(),
	Reports: DefaultReportMessages,
	Media:   DefaultMediaMessages,
	Memory:  DefaultMemoryMessages,

	Knowledge: DefaultKnowledgeMessages,
	Ratings:   DefaultRatingMessages,
	Cards:     DefaultCardMessages,
}

// applyDefaults fills every entry left out with its default.
func (m *Messages) applyDefaults() {
	fillWords(reflect.ValueOf(m).Elem(), reflect.ValueOf(DefaultMessages))
	m.Agent.Empty = m.Empty
}

// fillWords sets each empty string, left-out list and, inside nested structs,
// each of their entries of v to def's.
func fillWords(v, def reflect.Value) {
	for i := range v.NumField() {
		f, d := v.Field(i), def.Field(i)
		switch f.Kind() {
		case reflect.String:
			if f.String() == "" {
				f.SetString(d.String())
			}
		case reflect.Slice:
			if f.IsNil() { // left out; an explicit [] stays for validate to refuse
				f.Set(d)
			}
		case reflect.Struct:
			fillWords(f, d)
		}
	}
}

// verb is one formatting verb of a sentence (%s, %d, %[1]s...).
var verb = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z%]`)

// validate reports each sentence whose verbs differ from its default's
// (a missing %s drops what it named; an extra one prints garbage), and
// lists that must not be empty, to bad, naming the key.
func (m *Messages) validate(bad func(key, format string, args ...any)) {
	checkWords("messages", reflect.ValueOf(*m), reflect.ValueOf(DefaultMessages), bad)
	if n := len(m.Reports.Schedule.Weekdays); n != 7 {
		bad("messages.reports.schedule.weekdays", "must name 7 days, Sunday first, got %d", n)
	}
}

func checkWords(prefix string, v, def reflect.Value, bad func(key, format string, args ...any)) {
	t := v.Type()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "-" || name == "" {
			continue
		}
		key := prefix + "." + name
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			if got, want := verb.FindAllString(f.String(), -1), verb.FindAllString(def.Field(i).String(), -1); !slices.Equal(got, want) {
				bad(key, "must have the verbs %s of its default, in order, got %q", verbList(want), f.String())
			}
		case reflect.Slice:
			if f.Len() == 0 {
				bad(key, "must not be empty")
			}
		case reflect.Struct:
			checkWords(key, f, def.Field(i), bad)
		}
	}
}

func verbList(verbs []string) string {
	if len(verbs) == 0 {
		return "(none)"
	}
	return fmt.Sprint(verbs)
}
