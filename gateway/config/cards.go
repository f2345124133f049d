package config

// CardMessages are the words of confirmation and choice cards
// (messages.cards): a card's title, the state it shows once tapped, and
// the private note to someone who tapped another's card.
type CardMessages struct {
	Confirm    string `yaml:"confirm"`    // a confirmation card's title
	Choose     string `yaml:"choose"`     // a choice card's title
	Confirming string `yaml:"confirming"` // the card right after 确认 was tapped, while the call runs
	Confirmed  string `yaml:"confirmed"`  // the card once the confirmed call ran
	Cancelled  string `yaml:"cancelled"`  // the card once cancelled
	Expired    string `yaml:"expired"`    // the card tapped after agent.confirm_timeout
	Chosen     string `yaml:"chosen"`     // the card once an option was tapped; %s is the option
	Settled    string `yaml:"settled"`    // a tap on a card already answered
	NotYours   string `yaml:"not_yours"`  // the private note to someone who tapped another's card
	// Gone answers a tap whose question was replaced by a newer one (the
	// user asked something else meanwhile): nothing runs.
	Gone string `yaml:"gone"`
}

// DefaultCardMessages are the cards' words in Chinese.
var DefaultCardMessages = CardMessages{
	Confirm:    "请确认",
	Choose:     "请选择",
	Confirming: "已确认 · 执行中",
	Confirmed:  "已确认",
	Cancelled:  "已取消",
	Expired:    "已过期",
	Chosen:     "已选择：%s",
	Settled:    "已处理",
	NotYours:   "只有发起人可以操作",
	Gone:       "这个问题已经失效，没有执行。如仍需要，请重新发起。",
}
