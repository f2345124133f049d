// Package console is the operator's console served under /console: what
// the bot did and why (overview, conversations, run traces, skills), its
// trends as charts, the export of runs and conversations to CSV, the
// scheduled reports, an employee's memories and the channel self-test,
// over the gateway's own Postgres store as the narrow Store (never the
// pool). Pages are server-rendered html/template with a little htmx;
// nothing is built at run time and no secret is ever rendered.
// gateway/admin mounts it; it acts on nothing but its own accounts, skill
// reloads, the self-test, the report actions it is given (Deps), the
// knowledge base's documents (Deps.Knowledge) and the deletion of an
// employee's memories (audited), and it answers no chat.
//
// Files, by concept:
//   - The console: console.go (Deps and New, the routes, rendering and
//     errors), store.go (Store, all the console does to the database,
//     and memoryStore, gateway/memory's functions with their audit row).
//   - Operators: auth.go (accounts, sign-in and sessions), throttle.go
//     (the login limits, counted in Postgres across replicas).
//   - Pages: pages.go (overview, conversations, runs, skills),
//     trends.go (their charts over 24 hours or 7 days, and the tokens'
//     estimated cost at Deps.Costs), charts.go (a chart drawn as inline
//     SVG, its legend and its table), export.go (runs or conversations of
//     a range of days as streamed, masked CSV, for admins),
//     schedules.go (the scheduled reports: run now, pause, resume),
//     memories.go (one employee's memories: look up, export, delete all,
//     each audited), knowledge.go (the knowledge base: upload, list,
//     re-index, delete, the questions not answered and the documents
//     never cited), selftest.go (the channel self-test), refusals.go
//     (what a refused callback's failed check means).
//   - Words: texts.go (the interface text in each language, and
//     CheckTexts for messages.console overrides).
package console
