// Package privacy is what Hermes does with the personal data it holds
// beyond long-term memory (gateway/memory): it finds everything stored
// about one employee (their messages, the conversation, the run traces of
// their requests, the replies to them, their attachments, pending calls,
// the reports they own, their memories), exports it for a data request,
// erases it, and erases message content past privacy.retention.
//
// A person is a verified sender: a corp id and a user id in it, as the
// inbox stored them; gateway/store finds their rows (store.RowsOf) and
// scrubs one text from them (store.ScrubText, which gateway/memory calls
// when a memory is forgotten).
//
// Files, by concept: export.go and erase.go (a data request), retention.go
// (content past privacy.retention, in batches, once across replicas),
// service.go (the gateway feature: the retention job).
package privacy
