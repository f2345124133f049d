package skills

import "slices"

// allowed says whether c may use s (see Access). A skill the caller may not
// use is never bound by ToolsFor, so the model neither sees it nor can call
// it, and Registry.Call refuses it with ErrAccessDenied. Empty values never
// match, so an unknown chat or user id cannot pass a list by accident.
func allowed(s *Skill, c Caller) bool {
	a := s.Access
	in := func(list []string, v string) bool { return v != "" && slices.Contains(list, v) }
	who := len(a.Users) == 0 && len(a.Departments) == 0 ||
		in(a.Users, c.UserID) ||
		slices.ContainsFunc(c.Depts, func(d string) bool { return in(a.Departments, d) })
	where := len(a.Chats) == 0 || in(a.Chats, c.ChatID)
	return who && where
}
