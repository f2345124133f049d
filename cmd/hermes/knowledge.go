package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
)

// knowledgeCommands are the subcommands of `hermes knowledge`: the
// operators' hands on the company's documents the agent searches.
var knowledgeCommands = map[string]command{
	"add":    {"add documents: hermes knowledge add PATH… [--title T] [--key K] [--version V] [--effective YYYY-MM-DD] [--owner O] [--access 'departments=9,12 users=lisi']", runKnowledgeAdd},
	"list":   {"list the documents, versions in force first", runKnowledgeList},
	"delete": {"delete documents with their passages: hermes knowledge delete ID…", runKnowledgeDelete},
	"sync":   {"bring the index in step with knowledge.dir now (as serve does at start, on SIGHUP and every knowledge.sync_interval)", runKnowledgeSync},
	"search": {"what an employee would get: hermes knowledge search \"…\" --as USER [--corp C] [--dept D,…] [--chat CHAT]", runKnowledgeSearch},
}

// runKnowledge dispatches `hermes knowledge <subcommand>`.
func runKnowledge(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "knowledge", knowledgeCommands, args, std)
}

// parseInterspersed parses fs's flags wherever they stand among the
// positional arguments (hermes knowledge add a.md --title X b.md) and
// returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// openKnowledge loads the configuration, connects, migrates and gives the
// knowledge base, with its log on stderr.
func openKnowledge(ctx context.Context, path string, std stdio) (*knowledge.Base, func(), error) {
	cfg, err := config.LoadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	pool, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(std.err, nil))
	kb := knowledge.NewBase(pool, cfg.Knowledge, log, time.Now)
	kb.MaxBytes = cfg.Media.MaxBytes
	return kb, pool.Close, nil
}

// parseAccess reads --access: space- or semicolon-separated key=list
// pairs, lists comma-separated, keys corps, users, departments, chats.
func parseAccess(s string) (knowledge.Audience, error) {
	var a knowledge.Audience
	fields := map[string]*[]string{"corps": &a.Corps, "users": &a.Users, "departments": &a.Departments, "chats": &a.Chats}
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ';' }) {
		k, v, ok := strings.Cut(part, "=")
		dst, known := fields[strings.TrimSpace(k)]
		if !ok || !known {
			return a, fmt.Errorf("--access: %q is not corps=, users=, departments= or chats=", part)
		}
		*dst = append(*dst, strings.Split(v, ",")...)
	}
	return a, nil
}

func runKnowledgeAdd(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("knowledge add", std.err)
	title := fs.String("title", "", "the title (default: the file name without its extension)")
	key := fs.String("key", "", "names the document across versions (default: the title)")
	version := fs.String("version", "", "its version, as the reply names it (2025版)")
	effective := fs.String("effective", "", "the date it takes effect, YYYY-MM-DD: of one key's versions the latest is in force")
	owner := fs.String("owner", "", "who answers for it (HR, IT…)")
	access := fs.String("access", "", "who may see it: 'corps=ww1 departments=9,12 users=lisi chats=c1' (default: everyone in knowledge.corps)")
	admin := fs.String("admin", defaultAdmin(), "who adds it, for the record")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 || (*title != "" || *key != "") && len(files) > 1 {
		fmt.Fprintln(std.err, "usage: hermes knowledge add [--config FILE] PATH… (--title and --key with one PATH only)")
		return errUsage
	}
	aud, err := parseAccess(*access)
	if err != nil {
		return err
	}
	var eff time.Time
	if *effective != "" {
		if eff, err = time.Parse(time.DateOnly, *effective); err != nil {
			return fmt.Errorf("--effective: want YYYY-MM-DD, got %q", *effective)
		}
	}
	// Every file is read and checked before anything is stored, so a
	// refused one changes nothing.
	news := make([]knowledge.NewDocument, len(files))
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		t := *title
		if t == "" {
			t = strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		}
		abs, _ := filepath.Abs(f)
		news[i] = knowledge.NewDocument{Name: filepath.Base(f), Data: data, Key: *key, Title: t, Owner: *owner, Version: *version,
			Effective: eff, Audience: aud, Source: abs, AddedBy: *admin}
	}
	kb, closeDB, err := openKnowledge(ctx, *path, std)
	if err != nil {
		return err
	}
	defer closeDB()
	var failed []error
	for _, n := range news {
		a, err := kb.Add(ctx, n)
		switch {
		case err != nil:
			failed = append(failed, err)
			fmt.Fprintf(std.err, "refused %s: %v\n", n.Source, err)
		case a.Unchanged:
			fmt.Fprintf(std.out, "unchanged %d %s (%s)\n", a.Document.ID, a.Document.Title, n.Source)
		default:
			state := "in force"
			if !a.Document.Current {
				state = "superseded by a newer version"
			}
			fmt.Fprintf(std.out, "added %d %s: %d passages, %s\n", a.Document.ID, a.Document.Title, a.Chunks, state)
		}
	}
	return errors.Join(failed...)
}

func runKnowledgeList(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("knowledge list", std.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	kb, closeDB, err := openKnowledge(ctx, *path, std)
	if err != nil {
		return err
	}
	defer closeDB()
	docs, err := knowledge.List(ctx, kb.Pool)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTITLE\tVERSION\tEFFECTIVE\tIN FORCE\tPASSAGES\tAUDIENCE\tSOURCE")
	for _, d := range docs {
		eff := ""
		if !d.Effective.IsZero() {
			eff = d.Effective.Format(time.DateOnly)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%t\t%d\t%s\t%s\n", d.ID, d.Title, d.Version, eff, d.Current, d.Chunks, audience(d.Audience), d.Source)
	}
	return w.Flush()
}

// audience is a document's audience as --access writes it.
func audience(a knowledge.Audience) string {
	var parts []string
	for _, f := range []struct {
		k string
		v []string
	}{{"corps", a.Corps}, {"departments", a.Departments}, {"users", a.Users}, {"chats", a.Chats}} {
		if len(f.v) > 0 {
			parts = append(parts, f.k+"="+strings.Join(f.v, ","))
		}
	}
	if len(parts) == 0 {
		return "everyone"
	}
	return strings.Join(parts, " ")
}

func runKnowledgeDelete(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("knowledge delete", std.err)
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		fmt.Fprintln(std.err, "usage: hermes knowledge delete [--config FILE] ID…")
		return errUsage
	}
	kb, closeDB, err := openKnowledge(ctx, *path, std)
	if err != nil {
		return err
	}
	defer closeDB()
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a document id", s)
		}
		d, err := knowledge.Delete(ctx, kb.Pool, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.out, "deleted %d %s\n", d.ID, d.Title)
	}
	return nil
}

func runKnowledgeSync(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("knowledge sync", std.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	kb, closeDB, err := openKnowledge(ctx, *path, std)
	if err != nil {
		return err
	}
	defer closeDB()
	if kb.Cfg.Dir == "" {
		return errors.New("knowledge.dir is not set in the configuration")
	}
	out, err := kb.Sync(ctx)
	if err != nil {
		return err
	}
	for _, l := range []struct {
		verb  string
		paths []string
	}{{"added", out.Added}, {"changed", out.Changed}, {"removed", out.Removed}} {
		for _, p := range l.paths {
			fmt.Fprintf(std.out, "%s %s\n", l.verb, p)
		}
	}
	fmt.Fprintf(std.out, "%d unchanged\n", out.Unchanged)
	var refused []error
	for _, why := range out.Refused {
		refused = append(refused, why)
	}
	return errors.Join(refused...) // each names its file; exit 1
}

func runKnowledgeSearch(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("knowledge search", std.err)
	var c knowledge.Caller
	fs.StringVar(&c.UserID, "as", "", "the employee's user id (required)")
	fs.StringVar(&c.CorpID, "corp", "", "their corp (default: the only one of knowledge.corps)")
	depts := fs.String("dept", "", "their department ids, comma-separated (the directory is not asked)")
	fs.StringVar(&c.ChatID, "chat", "", "the conversation asked in")
	words, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if c.UserID == "" || len(words) == 0 {
		fmt.Fprintln(std.err, "usage: hermes knowledge search [--config FILE] \"QUESTION\" --as USER [--corp C] [--dept D,…] [--chat CHAT]")
		return errUsage
	}
	if *depts != "" {
		c.Depts = strings.Split(*depts, ",")
	}
	kb, closeDB, err := openKnowledge(ctx, *path, std)
	if err != nil {
		return err
	}
	defer closeDB()
	if c.CorpID == "" && len(kb.Cfg.Corps) == 1 {
		c.CorpID = kb.Cfg.Corps[0]
	}
	if c.CorpID == "" {
		return errors.New("--corp is required (knowledge.corps does not name exactly one)")
	}
	ps, err := kb.Search(ctx, c, strings.Join(words, " "))
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		_, err := fmt.Fprintln(std.out, "no passage answers this for", c.UserID)
		return err
	}
	for i, p := range ps {
		fmt.Fprintf(std.out, "%d. %s  (%.2f)\n%s\n\n", i+1, knowledge.SourceOf(p, config.DefaultKnowledgeMessages.Page), p.Score, indent(p.Text))
	}
	return nil
}

func indent(s string) string { return "   " + strings.ReplaceAll(s, "\n", "\n   ") }
