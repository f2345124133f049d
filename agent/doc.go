// Package agent runs one conversational turn: a plain loop that asks the model,
// runs the tools it calls (skills bound to the caller by the gateway) and stops
// with an answer or an explicit stop reason. It knows nothing of SQL, HTTP
// servers or chat platforms: the caller hands it a Turn (history, the
// caller's tools, a continuation) and gets a Result (the reply, the trace,
// what the session waits for), and who the user is was decided before,
// in the tools it was given. The model's wire types (go-openai) stay
// inside this package; its callers see Message, Turn and Result.
//
// Files, by concept:
//   - The contract: agent.go (Model and Streamer, Message, Turn, Options,
//     Step, Result, Event and the stop reasons), errors.go (one sentinel
//     per stop reason), messages.go (Messages: every text a run shows the
//     user, and the honest partial answer of a run that could not finish).
//   - The loop: loop.go (Run: budgets, compression, ask, answer or tools),
//     run.go (the state of one run: the first messages, the tools block,
//     the token estimate), continuation.go (Continuation: a task that
//     stopped to ask the user, resumed in a later run).
//   - The input: normalize.go (the user's text cleaned and cut to its
//     budget), tokens.go (token counting, cached, with the embedded
//     cl100k ranks).
//   - Offering skills: match.go (how well a text fits a skill, by words),
//     colloquial.go (the clipped verbs and phrases employees use, expanded
//     into skills' words), chitchat.go (messages that ask for no company
//     data, offered nothing: by the act of the head clause — writing,
//     ideas, explaining, an opinion — and whether a record is asked for,
//     not by topic words), chitchat_object.go (what a producing verb's
//     object is: a text, or a record the catalog holds), offer.go (which skills are
//     offered in full, ranked again after each tool round, the rest of the
//     request first), index.go (the skill index or
//     the index of areas, and load_skills by name or search), context.go (the system prompt, built
//     once per run so prompt caches hit), schema_text.go (a schema's rules
//     in plain words), builtin.go (the built-in finish and
//     recall_observation tools).
//   - Shaped requests: plan.go (the plan stage: goal, format, subtasks),
//     format.go (the answer checked against the format asked for),
//     respond.go (what follows an answer: the next subtask, the
//     composition, a format fix, or a skill's response template).
//   - Calling the model: retry.go (one call, retried with backoff when
//     transient; RateLimited and RetryAfterError), stream.go (streamed
//     answers assembled, and their text shown with personal numbers
//     masked), openai.go (NewOpenAIModel over go-openai), offline.go
//     (OfflineModel, the demo model that says it is one).
//   - Tool calls: toolcall.go (names repaired, calls written as JSON in
//     text, arguments validated), execute.go (one round of calls: checked
//     first, run in order, ParallelSafe ones together), writes.go (a write
//     runs once per run; the facts a partial answer keeps).
//   - Results as text: observe.go (a skill's answer by content type, and
//     tool errors explained to the model), jsontree.go (JSON that keeps
//     its key order), htmltext.go (HTML to readable text), truncate.go
//     (text cut at head and tail, JSON shrunk structurally).
//   - Context compression: compress.go (old observations replaced by
//     summaries when the prompt grows too large), archive.go (Archive:
//     where their full texts stay, for recall_observation).
//   - Answers checked against what ran: verify.go (a claimed action with
//     no write, a cited result no skill returned, a colleague named over
//     the caller's own record: corrected once, else an honest sentence).
//   - Whose data: whose.go (a personal skill's call carries a subject
//     argument the model fills and Hermes removes; with the text's own
//     check of who is named, a call about someone else does not run;
//     the reply says others' data cannot be shown, and labels personal
//     results as the asker's own).
//   - What may reach a chat or a trace: sanitize.go (debug fields dropped,
//     secrets and personal numbers masked), present.go (the same masking
//     for the gateway's own paths), trace.go (each step's trace entry, and
//     the stop).
package agent
