package gateway

import (
	"fmt"
	"strings"

	"github.com/hermes-gw/hermes/skills"
)

// A chat command is a message that starts with '/'. Each has a Chinese
// alias, since employees type those as readily.
const (
	cmdReset = "reset"
	cmdHelp  = "help"
)

var commandAliases = map[string]string{
	"/reset": cmdReset, "重置": cmdReset, "/重置": cmdReset,
	"/help": cmdHelp, "帮助": cmdHelp, "/帮助": cmdHelp,
}

// parseCommand recognises a chat command: a known alias alone on the
// message, or any '/word' (unknown ones get a short help). ok is false for
// ordinary text.
func parseCommand(text string) (name, raw string, ok bool) {
	t := strings.TrimSpace(text)
	if name, known := commandAliases[strings.ToLower(t)]; known {
		return name, t, true
	}
	if strings.HasPrefix(t, "/") && len(t) > 1 && !strings.ContainsAny(t[1:2], " /") {
		word, _, _ := strings.Cut(t, " ")
		return "", word, true
	}
	return "", "", false
}

// runCommand answers a chat command. reset says the session starts afresh.
func (rn *runner) runCommand(name, raw string, caller skills.Caller) (reply string, reset bool) {
	g := rn.g
	switch name {
	case cmdReset:
		return g.cfg.Messages.Reset, true
	case cmdHelp:
		return g.runner.helpText(caller), false
	default:
		return fmt.Sprintf(g.cfg.Messages.UnknownCmd, raw), false
	}
}

// helpText lists the skills the caller may use, by the access rules: the
// same set the agent may offer them.
func (rn *runner) helpText(caller skills.Caller) string {
	g := rn.g
	tools := g.skills.Load().ToolsFor(caller)
	if len(tools) == 0 {
		return g.cfg.Messages.NoSkills
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
	return fmt.Sprintf(g.cfg.Messages.Help, strings.Join(lines, "\n"))
}
