package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/store"
)

// runsShowFieldLimit keeps one printed field readable in a terminal.
const runsShowFieldLimit = 600

// runsCommands are the subcommands of `hermes runs`.
var runsCommands = map[string]command{
	"list": {"find runs: hermes runs list [--user ID] [--chat ID] [--since T] [--until T] [--stop REASON]", runRunsList},
	"show": {"print a run's trace: hermes runs show RUN_ID, or --message MSG_ID", runRunsShow},
}

// runRuns dispatches `hermes runs <subcommand>`.
func runRuns(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "runs", runsCommands, args, std)
}

// runRunsShow prints the trace of a run, named by its id or by the
// platform message it answered.
func runRunsShow(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("runs show", std.err)
	msgID := fs.String("message", "", "the platform message id the run answered, instead of RUN_ID")
	fs.Usage = func() {
		fmt.Fprintln(std.err, "usage: hermes runs show [--config FILE] RUN_ID | --message MSG_ID")
		fs.PrintDefaults()
	}
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return err
	}
	if (fs.NArg() == 1) == (*msgID != "") || fs.NArg() > 1 {
		fs.Usage()
		return errUsage
	}
	pool, err := store.Open(ctx, cfg.Database.URL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	ids := fs.Args()
	if *msgID != "" {
		if ids, err = store.RunIDsByMessage(ctx, pool, *msgID); err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("no run answered message %s: %w", *msgID, store.ErrNotFound)
		}
	}
	for i, id := range ids {
		if i > 0 {
			fmt.Fprintln(std.out)
		}
		run, err := store.GetRun(ctx, pool, id)
		if err != nil {
			return err
		}
		steps, err := store.GetRunSteps(ctx, pool, run.ID)
		if err != nil {
			return err
		}
		printRun(std.out, run, steps)
	}
	return nil
}

// printRun writes a run's trace for a person: the head, then each step
// with its action, observation and any further fields the agent recorded.
func printRun(w io.Writer, run store.RunRecord, steps []store.StepRecord) {
	fmt.Fprintf(w, "run %s  session %d  inbound %d  model %s\n", run.ID, run.SessionID, run.InboundID, run.Model)
	fmt.Fprintf(w, "started %s  took %s  stop %s  tokens %d prompt / %d completion\n",
		run.StartedAt.Format(time.RFC3339), run.FinishedAt.Sub(run.StartedAt).Round(time.Millisecond),
		run.StopReason, run.PromptTokens, run.CompletionTokens)
	if run.Error != "" {
		fmt.Fprintf(w, "error: %s\n", run.Error)
	}
	for _, s := range steps {
		head := fmt.Sprintf("\n#%d %s", s.Step, s.Kind)
		if s.Tool != "" {
			head += " " + s.Tool
		}
		fmt.Fprintf(w, "%s  %s  %d/%d tokens\n", head, s.Latency, s.PromptTokens, s.CompletionTokens)
		printField(w, "args", s.Args)
		printField(w, "content", s.Content)
		printField(w, "observation", s.Observation)
		printField(w, "error", s.Error)
		printExtra(w, s.Detail)
	}
	fmt.Fprintf(w, "\nreply: %s\n", agent.MaskedText(run.Reply))
}

// printField prints one field of a trace with personal numbers masked as
// in any reply: arguments the model wrote keep what the user typed, and
// traces stored before prompts were masked still hold them.
func printField(w io.Writer, name, value string) {
	value = agent.MaskedText(strings.TrimSpace(value))
	if value == "" {
		return
	}
	if len(value) > runsShowFieldLimit {
		cut := runsShowFieldLimit
		for cut > 0 && (value[cut]&0xC0) == 0x80 { // keep whole UTF-8 characters
			cut--
		}
		value = value[:cut] + fmt.Sprintf(" … (%d bytes)", len(value))
	}
	fmt.Fprintf(w, "    %s: %s\n", name, strings.ReplaceAll(value, "\n", "\n      "))
}

// shownStepFields are printed by printRun already.
var shownStepFields = map[string]bool{
	"N": true, "Kind": true, "Tool": true, "Args": true, "Observation": true, "Error": true, "Content": true,
	"PromptTokens": true, "CompletionTokens": true, "Latency": true,
}

// printExtra prints what else the agent recorded on a step (state delta,
// corrections, ...), whatever its shape, skipping empty values.
func printExtra(w io.Writer, detail []byte) {
	var m map[string]any
	if len(detail) == 0 || json.Unmarshal(detail, &m) != nil {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !shownStepFields[k] && !isEmpty(m[k]) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		printField(w, strings.ToLower(k), string(v))
	}
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
