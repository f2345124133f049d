package skills

import "slices"

// allowed says whether c may use s (see Access). A skill the caller may not
// use is never bound by ToolsFor, so the model neither sees it nor can call
// it, and Registry.Call refuses it with ErrAccessDenied. Empty values never
// match, so an unknown chat or user id cannot pass a list by accident.
//
// User, department and chat ids are only unique within one corp (and a
// platform): zhangsan of corp B must not pass a rule written for zhangsan
// of corp A. So a rule always names its corps, and the caller's corp must
// be one of them; channels and accounts narrow it further when given.
func allowed(s *Skill, c Caller) bool {
	a := s.Access
	if a.empty() {
		return true
	}
	in := func(list []string, v string) bool { return v != "" && slices.Contains(list, v) }
	where := in(a.Corps, c.CorpID) &&
		(len(a.Channels) == 0 || in(a.Channels, c.Channel)) &&
		(len(a.Accounts) == 0 || in(a.Accounts, c.Account))
	who := len(a.Users) == 0 && len(a.Departments) == 0 ||
		in(a.Users, c.UserID) ||
		slices.ContainsFunc(c.Depts, func(d string) bool { return in(a.Departments, d) })
	chat := len(a.Chats) == 0 || in(a.Chats, c.ChatID)
	return where && who && chat
}

// empty reports an access section that limits nothing: everyone may use
// the skill.
func (a Access) empty() bool {
	return len(a.Corps)+len(a.Channels)+len(a.Accounts)+len(a.Users)+len(a.Departments)+len(a.Chats) == 0
}
