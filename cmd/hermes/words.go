package main

import (
	"context"
	"flag"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/web/console"
)

// runWords is `hermes words [--config F]`: it prints the whole catalogue of
// words, every key of messages: with the value in effect (the file's, or
// the default), the console's interface text included, as YAML one can
// copy into the configuration and edit. Without --config it prints the
// defaults.
func runWords(_ context.Context, args []string, std stdio) error {
	fs, path := newFlags("words", std.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	words := config.DefaultMessages
	if flagSet(fs, "config") {
		cfg, err := config.LoadConfig(*path)
		if err != nil {
			return err
		}
		words = cfg.Messages
	}
	words.Console = console.Catalogue(words.Console)
	enc := yaml.NewEncoder(std.out)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]config.Messages{"messages": words}); err != nil {
		return fmt.Errorf("words: %w", err)
	}
	return enc.Close()
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
