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
}

// DefaultRatingMessages are the ratings' words in Chinese.
var DefaultRatingMessages = RatingMessages{
	UpWords:    []string{"👍", "👍🏻", "赞", "有用", "有帮助"},
	DownWords:  []string{"👎", "👎🏻", "没用", "没帮助"},
	ThanksUp:   "收到，谢谢你的评价！",
	ThanksDown: "收到，已记下这条回答没有帮到你，我们会改进。急事请直接联系对应的服务台。",
	Nothing:    "最近没有可以评价的回答。",
	Help:       "评价回答：在我回答后发送 👍 或 👎。",
}
