package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// demoMemoryScript shows long-term memory: a note the user asks for, a
// statement the model learns from, recall after /reset, and the list the
// user controls.
var demoMemoryScript = []string{
	"记住 我在上海办公室，工位 12F-031",
	demoStatement,
	"/reset",
	"上海办公室的打印机在哪",
	"/memory",
}

// demoStatement is the line the model learns from: after its answer,
// Hermes says in one more line what it kept.
const demoStatement = "我负责华东区的销售，以后回复请简短一些"

// learnWait bounds the demo's wait for memory learning (a job after the
// answer) before it lists the memories.
const learnWait = 10 * time.Second

func demoMemory(ctx context.Context, sess *consoleSession, stdout io.Writer) error {
	fmt.Fprintln(stdout, "\n== Memory: what Hermes keeps across sessions ==")
	for _, line := range demoMemoryScript {
		if line == "/memory" {
			if err := waitLearned(ctx, sess); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "你> %s\n", line)
		if _, err := sess.ask(ctx, line); err != nil {
			return err
		}
		if line == demoStatement {
			// The line saying what was learned comes after the answer.
			if _, err := sess.next(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitLearned waits until no memory learning job is left, at most
// learnWait: the demo lists what the model learned, not a race.
func waitLearned(ctx context.Context, sess *consoleSession) error {
	pool := sess.gw.Services().Pool
	ctx, cancel := context.WithTimeout(ctx, learnWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'hermes.learn_memories'
AND state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&open); err != nil || open == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return nil // list what is there
		case <-tick.C:
		}
	}
}
