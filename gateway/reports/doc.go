// Package reports is scheduled reports, a feature beside the pipeline
// (gateway.Feature): a report sends a skill's answer through a template,
// or the agent's answer to a prompt, to one or more chats on a cron
// schedule, run as its owner with the owner's access as it is at run time.
// It works only through gateway.Services: the Outbox for every message,
// the AgentRunner for prompt reports, Jobs for its run jobs. It sends
// nothing itself and keeps no schedule in memory: due ticks are claimed in
// Postgres, once across replicas.
//
// Files, by concept:
//   - The feature: service.go (Service: Attach, its job worker, the
//     scanner a full replica runs, and the run job).
//   - Defining reports: define.go (what a report is: NewReport, Spec,
//     TargetRef; checking one, creating, previewing and listing them),
//     limits.go (the limits of reports employees make in chat: Refusal and
//     its sentinels for frequency, count, write skills and first contact).
//   - Scheduling: scan.go (due ticks claimed once across replicas,
//     ScheduleReports; runs outside the schedule, RunReportNow; pausing).
//   - Running: run.go (one run: the content made as the owner, queued to
//     every target through the outbox with the run's record; RenderReport
//     for previews), chart.go (a chart from a skill's answer, drawn as a
//     PNG with an embedded CJK font, or written as a markdown table where a
//     channel shows no pictures).
//   - In chat: tools.go (the report_* tools the agent is offered, bound to
//     the verified sender, and their confirmed calls).
//
// The cron schedule itself is the leaf package reports/schedule, which the
// config and the console read too.
package reports
