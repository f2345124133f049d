// Package groupcommit makes the small writes of concurrent callers one
// transaction: each caller hands its item to a Committer and waits, and the
// Committer writes whatever items are waiting together, in one transaction
// with one commit, then answers each caller. On the ack path this turns
// one durable commit (one WAL flush) per callback into one per batch, and
// a callback holds no connection of its own while it waits.
//
// A batch is the items waiting when a writer is free, up to MaxBatch,
// collected for at most MaxWait after the first; at most Writers batches
// are written at once, each on one pooled connection. A batch that fails
// is written again item by item, each in its own transaction, so an item
// that cannot be written (or a deadlock between two batches) fails only
// its own caller.
//
// Files: committer.go (Committer, Config, Do).
package groupcommit
