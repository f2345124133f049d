package config

// RatingMessages are the words of rating an answer (messages.ratings): a
// message that is only one of UpWords or DownWords rates the sender's
// newest answer in that chat.
type RatingMessages struct {
	UpWords   []string `yaml:"up_words"`
	DownWords []string `yaml:"down_words"`
	ThanksUp  string   `yaml:"thanks_up"`
	// ThanksDown answers a 👎: the employee learns where to go instead.
	ThanksDown string `yaml:"thanks_down"`
	// Nothing answers a rating with no answer to rate in the last
	// ratings window.
	Nothing string `yaml:"nothing"`
	// Help is the line of /help that tells how to rate.
	Help string `yaml:"help"`
	// UpButton and DownButton label the rating buttons of an answer sent
	// as a card; Rated (with the button's label) is the card's title once
	// rated.
	UpButton   string `yaml:"up_button"`
	DownButton string `yaml:"down_button"`
	Rated      string `yaml:"rated"`
}

// RatingsConfig is how answers may be rated (ratings:).
type RatingsConfig struct {
	// Buttons: where the channel can show an answer as a card
	// (channels.Limits.CardAnswers: Feishu without streaming), the answer
	// carries 👍 / 👎 buttons. Default true. Typing 👍 / 👎 works anyway.
	Buttons *bool `yaml:"buttons"`
}

// ButtonsOn reports whether answers carry rating buttons where they can.
func (r RatingsConfig) ButtonsOn() bool { return r.Buttons == nil || *r.Buttons }

// DefaultRatingMessages are the ratings' words in Chinese.
var DefaultRatingMessages = RatingMessages{
	UpWords:    []string{"👍", "👍🏻", "赞", "有用", "有帮助"},
	DownWords:  []string{"👎", "👎🏻", "没用", "没帮助"},
	ThanksUp:   "收到，谢谢你的评价！",
	ThanksDown: "收到，已记下这条回答没有帮到你，我们会改进。急事请直接联系对应的服务台。",
	Nothing:    "最近没有可以评价的回答。",
	Help:       "评价回答：在我回答后发送 👍 或 👎（回答带按钮时也可以直接点按钮）。",
	UpButton:   "👍 有用",
	DownButton: "👎 没用",
	Rated:      "已评价：%s",
}
