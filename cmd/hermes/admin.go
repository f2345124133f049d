package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hermes-gw/hermes/web/console"
)

// envAdminPassword gives `hermes admin create` the password without a
// prompt (a flag would show it in the process list and shell history).
const envAdminPassword = "HERMES_ADMIN_PASSWORD"

// adminCommands are the subcommands of `hermes admin`.
var adminCommands = map[string]command{
	"create": {"add a console account: hermes admin create --user NAME [--role admin|viewer]; password from " + envAdminPassword + " or stdin", runAdminCreate},
}

// runAdmin dispatches `hermes admin <subcommand>`.
func runAdmin(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "admin", adminCommands, args, std)
}

func runAdminCreate(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("admin create", std.err)
	user := fs.String("user", "", "the account's username (required)")
	role := fs.String("role", console.RoleAdmin, "admin (everything) or viewer (read only)")
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return err
	}
	if *user == "" {
		fmt.Fprintln(std.err, "hermes admin create: --user is required")
		return errUsage
	}
	password, ok := os.LookupEnv(envAdminPassword)
	if !ok {
		fmt.Fprintln(std.err, "password (one line):")
		line, err := bufio.NewReader(std.in).ReadString('\n')
		if err != nil && line == "" {
			return errors.New("no password on stdin and " + envAdminPassword + " not set")
		}
		password = strings.TrimRight(line, "\r\n")
	}
	pool, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := console.CreateAdmin(ctx, pool, *user, password, *role); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "console account %s (%s) created\n", *user, *role)
	return nil
}
