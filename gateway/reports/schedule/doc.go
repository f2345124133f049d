// Package schedule reads a scheduled report's cron expression in its
// time zone, finds its fire times and says them in words (Words, Chinese
// by default, reworded under messages.reports.schedule). It is a leaf (it
// imports no Hermes package) because the config's validation and the
// console read schedules as well as the reports feature (gateway/reports),
// which itself depends on the gateway; it knows nothing of what a report
// sends or where.
//
// Files, by concept:
//   - Schedules: schedule.go (Parse into a Schedule; Next, NextN and
//     TooClose over its fire times; Words, Describe and Duration, how a
//     schedule is said to users).
package schedule
