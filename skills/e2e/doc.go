// Package e2e runs the skills with the real agent loop and a scripted
// model speaking the OpenAI wire protocol: the proof that the model cannot
// choose whose data a skill returns, and that a write happens once however
// often the model or a crash repeats it. It is tests only (package
// e2e_test); this file holds no code, only this comment. It stops at the
// skills: no gateway, no database, no chat platform (gateway's own tests
// cover those).
//
// Files, by concept:
//   - Identity: spoof_test.go (a model that asks for another employee's
//     payslip is refused by the backend, which reads the signed identity;
//     the caller's own is answered).
//   - Writes: writes_test.go (a repeated create, a run again after a crash
//     and a retried transient failure each make one ticket; a partial
//     answer keeps the ticket's number).
package e2e
