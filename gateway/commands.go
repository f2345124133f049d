package gateway

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/skills"
)

// A chat command is a message that starts with '/', or one of its
// aliases (messages.reset_commands, help_commands: Chinese ones by
// default, since employees type those as readily).
const (
	cmdReset = "reset"
	cmdHelp  = "help"
)

// parseCommand recognises a chat command: a known alias alone on the
// message, or any '/word' (unknown ones get a short help). ok is false for
// ordinary text.
func parseCommand(text string, words config.Messages) (name, raw string, ok bool) {
	t := strings.TrimSpace(text)
	for cmd, aliases := range map[string][]string{cmdReset: words.ResetCommands, cmdHelp: words.HelpCommands} {
		if slices.ContainsFunc(aliases, func(a string) bool { return strings.EqualFold(a, t) }) {
			return cmd, t, true
		}
	}
	if strings.HasPrefix(t, "/") && len(t) > 1 && !strings.ContainsAny(t[1:2], " /") {
		word, _, _ := strings.Cut(t, " ")
		return "", word, true
	}
	return "", "", false
}

// runCommand answers a chat command. reset says the session starts afresh.
func (rn *runner) runCommand(name, raw string, caller skills.Caller) (reply string, reset bool) {
	switch name {
	case cmdReset:
		return rn.cfg.Messages.Reset, true
	case cmdHelp:
		help := rn.helpText(caller)
		for _, cf := range commandFeatures(rn.features) {
			if line := cf.Help(caller.Account, caller.ChatID); line != "" {
				help += "\n\n" + line
			}
		}
		return help, false
	default:
		return fmt.Sprintf(rn.cfg.Messages.UnknownCmd, raw), false
	}
}

// helpText lists the skills the caller may use, by the access rules: the
// same set the agent may offer them.
func (rn *runner) helpText(caller skills.Caller) string {
	tools := rn.skills.Load().ToolsFor(caller)
	if len(tools) == 0 {
		return rn.cfg.Messages.NoSkills
	}
	lines := make([]string, 0, len(tools))
	for _, t := range tools {
		spec := t.Spec()
		// The first sentence says what it does; the rest is guidance for
		// the model.
		desc, _, _ := strings.Cut(strings.TrimSpace(spec.Description), "\n")
		if i := strings.Index(desc, "。"); i > 0 {
			desc = desc[:i]
		}
		lines = append(lines, "• "+desc)
	}
	return fmt.Sprintf(rn.cfg.Messages.Help, strings.Join(lines, "\n"))
}
