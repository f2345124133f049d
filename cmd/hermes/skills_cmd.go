package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hermes-gw/hermes/skills"
)

// skillsCommands are the subcommands of `hermes skills`.
var skillsCommands = map[string]command{
	"check":          {"validate skill definitions: hermes skills check DIR", runSkillsCheck},
	"import-openapi": {"turn an OpenAPI 3 document into skills: hermes skills import-openapi SPEC [--out DIR]", runSkillsImport},
}

// runSkills dispatches `hermes skills <subcommand>`.
func runSkills(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "skills", skillsCommands, args, std)
}

// runSubcommand dispatches `hermes <name> <subcommand>`; "help", -h and
// --help print the subcommands and succeed.
func runSubcommand(ctx context.Context, name string, table map[string]command, args []string, std stdio) error {
	if len(args) > 0 && isHelp(args[0]) {
		subcommandUsage(std.out, name, table)
		return errHelp
	}
	if len(args) == 0 {
		subcommandUsage(std.err, name, table)
		return errUsage
	}
	sub, ok := table[args[0]]
	if !ok {
		fmt.Fprintf(std.err, "hermes %s: unknown subcommand %q\n", name, args[0])
		subcommandUsage(std.err, name, table)
		return errUsage
	}
	return sub.run(ctx, args[1:], std)
}

func subcommandUsage(w io.Writer, name string, table map[string]command) {
	fmt.Fprintf(w, "usage: hermes %s <subcommand> [flags]\n", name)
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-15s %s\n", n, table[n].summary)
	}
}

// parseWithPositional parses flags that may come before or after the one
// positional argument ("check DIR --run-budget 60s" and "check --run-budget
// 60s DIR" both work).
func parseWithPositional(fset *flag.FlagSet, args []string) (string, error) {
	if err := fset.Parse(args); err != nil {
		return "", err
	}
	if fset.NArg() == 0 {
		return "", errors.New("missing argument")
	}
	arg := fset.Arg(0)
	if err := fset.Parse(fset.Args()[1:]); err != nil {
		return "", err
	}
	if fset.NArg() > 0 {
		return "", fmt.Errorf("unexpected arguments %q", fset.Args())
	}
	return arg, nil
}

// runSkillsCheck prints every finding of skills.Check and fails when any is
// an error, so CI can gate skill changes on it.
func runSkillsCheck(_ context.Context, args []string, std stdio) error {
	fset := flag.NewFlagSet("hermes skills check", flag.ContinueOnError)
	fset.SetOutput(std.err)
	budget := fset.Duration("run-budget", skills.DefaultRunBudget, "the agent's wall clock per run (agent.run_timeout)")
	baseURL := fset.String("base-url", "", "the gateway's skills.base_url, joined to path endpoints")
	hmacEnv := fset.String("hmac-key-env", "", "the gateway's default identity key variable")
	allow := fset.String("allow", "", "comma-separated command allow-list; unset: programs get a warning")
	fset.Usage = func() {
		fmt.Fprintln(std.err, "usage: hermes skills check DIR [--run-budget 90s] [--base-url URL] [--hmac-key-env VAR] [--allow /bin/a,/bin/b]")
		fset.PrintDefaults()
	}
	dir, err := parseWithPositional(fset, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		fmt.Fprintln(std.err, "hermes skills check:", err)
		fset.Usage()
		return errUsage
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a readable folder", dir)
	}
	opts := skills.CheckOptions{RunBudget: *budget, BaseURL: *baseURL, DefaultHMACKeyEnv: *hmacEnv}
	if *allow != "" {
		opts.CommandAllowList = strings.Split(*allow, ",")
	}
	findings := skills.Check(os.DirFS(dir), opts)
	return reportFindings(std, dir, findings)
}

func reportFindings(std stdio, dir string, findings []skills.Finding) error {
	errs, warns := 0, 0
	for _, f := range findings {
		if f.File != "" && f.File != "." && !strings.HasPrefix(f.File, "(") {
			f.File = filepath.Join(dir, filepath.FromSlash(f.File))
		}
		fmt.Fprintln(std.out, f.String())
		if f.Severity == skills.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	fmt.Fprintf(std.out, "%s: %d error(s), %d warning(s)\n", dir, errs, warns)
	if errs > 0 {
		return fmt.Errorf("%d error(s) in %s", errs, dir)
	}
	return nil
}

// runSkillsImport writes one SKILL.md per OpenAPI operation, or prints them
// when no --out is given, so the result can be reviewed first.
func runSkillsImport(_ context.Context, args []string, std stdio) error {
	fset := flag.NewFlagSet("hermes skills import-openapi", flag.ContinueOnError)
	fset.SetOutput(std.err)
	out := fset.String("out", "", "folder to write <name>/SKILL.md into; empty: print them")
	force := fset.Bool("force", false, "overwrite existing SKILL.md files")
	fset.Usage = func() {
		fmt.Fprintln(std.err, "usage: hermes skills import-openapi SPEC.(yaml|json) [--out DIR] [--force]")
		fset.PrintDefaults()
	}
	specPath, err := parseWithPositional(fset, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		fmt.Fprintln(std.err, "hermes skills import-openapi:", err)
		fset.Usage()
		return errUsage
	}
	spec, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	generated, err := skills.ImportOpenAPI(spec)
	if err != nil {
		return err
	}
	if *out == "" {
		for _, g := range generated {
			fmt.Fprintf(std.out, "# %s/%s\n%s\n", g.Dir, skills.DefinitionFile, g.SKILLMD)
		}
		return nil
	}
	// Check every target first: a half-written import is worse than none.
	for _, g := range generated {
		p := filepath.Join(*out, g.Dir, skills.DefinitionFile)
		if _, err := os.Stat(p); err == nil && !*force {
			return fmt.Errorf("%s exists; use --force to overwrite", p)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, g := range generated {
		dir := filepath.Join(*out, g.Dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p := filepath.Join(dir, skills.DefinitionFile)
		if err := os.WriteFile(p, g.SKILLMD, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(std.out, "wrote", p)
	}
	fmt.Fprintf(std.out, "%d skill(s) written; review them, then run: hermes skills check %s\n", len(generated), *out)
	return nil
}
