// Package console is the terminal channel behind `hermes chat` and
// `hermes demo`: the same pipeline as a chat platform, with a person at a
// terminal as the sender. The sender's identity is whatever the operator
// started the process with, so this channel is for trying skills locally,
// never for serving other people: it has no section in hermes.yaml, no
// callback route and no verification, and cmd/hermes builds it itself.
//
// Files, by concept:
//   - The channel: console.go (Channel: replies printed to a writer and
//     reported on Delivered, progress lines while tools run, Message for a
//     typed line).
//   - Reports: push.go (PushAddress: the terminal is the one chat, so a
//     report is printed there).
package console
