package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// skillFields are the SKILL.md front matter fields (README.md documents
// each). Anything else is an error.
var skillFields = map[string]fieldDecoder[*Skill]{
	"name":              stringField(func(s *Skill) *string { return &s.Name }),
	"description":       stringField(func(s *Skill) *string { return &s.Description }),
	"parameters":        decodeParameters,
	"executor":          stringField(func(s *Skill) *string { return &s.Executor }),
	"endpoint":          stringField(func(s *Skill) *string { return &s.Endpoint }),
	"method":            stringField(func(s *Skill) *string { return &s.Method }),
	"content_type":      stringField(func(s *Skill) *string { return &s.ContentType }),
	"parameter_map":     valueField(func(s *Skill) *map[string]string { return &s.ParameterMap }),
	"query_params":      valueField(func(s *Skill) *[]string { return &s.QueryParams }),
	"success_status":    valueField(func(s *Skill) *[]int { return &s.SuccessStatus }),
	"timeout":           durationField(func(s *Skill) *time.Duration { return &s.Timeout }),
	"fallback":          stringField(func(s *Skill) *string { return &s.Fallback }),
	"async":             valueField(func(s *Skill) *bool { return &s.Async }),
	"files":             valueField(func(s *Skill) *bool { return &s.Files }),
	"response_template": stringField(func(s *Skill) *string { return &s.ResponseTemplate }),
	"examples":          valueField(func(s *Skill) *[]string { return &s.Examples }),
	"display_name":      stringField(func(s *Skill) *string { return &s.DisplayName }),
	"synonyms":          valueField(func(s *Skill) *[]string { return &s.Synonyms }),
	"read_only":         valueField(func(s *Skill) *bool { return &s.ReadOnly }),
	"reports":           stringField(func(s *Skill) *string { return &s.Reports }),
	"personal":          valueField(func(s *Skill) **bool { return &s.Personal }),
	"parallel_safe":     valueField(func(s *Skill) *bool { return &s.ParallelSafe }),
	"safe_fields":       valueField(func(s *Skill) *[]string { return &s.SafeFields }),
	"retry": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		err := decodeMapping(&s.Retry, n, retryFields, "retry.", lines)
		if s.Retry.MaxAttempts == 0 {
			s.Retry.MaxAttempts = DefaultRetryAttempts // a retry section means "do retry"
		}
		return err
	},
	"circuit_breaker": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		s.Breaker = &BreakerPolicy{}
		return decodeMapping(s.Breaker, n, breakerFields, "circuit_breaker.", lines)
	},
	"auth": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		s.Auth = &Auth{}
		return decodeMapping(s.Auth, n, authFields, "auth.", lines)
	},
	"identity": decodeIdentity,
	"access": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		return decodeMapping(&s.Access, n, accessFields, "access.", lines)
	},
	"confirm": decodeConfirm,
	"triggers": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		return decodeMapping(&s.Triggers, n, triggerFields, "triggers.", lines)
	},
	"mcp": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		s.MCP = &MCPConfig{}
		return decodeMapping(s.MCP, n, mcpFields, "mcp.", lines)
	},
	"command": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		s.Command = &CommandConfig{}
		return decodeMapping(s.Command, n, commandFields, "command.", lines)
	},
}

var retryFields = map[string]fieldDecoder[*RetryPolicy]{
	"max_attempts": valueField(func(r *RetryPolicy) *int { return &r.MaxAttempts }),
	"backoff":      durationField(func(r *RetryPolicy) *time.Duration { return &r.Backoff }),
	"max_backoff":  durationField(func(r *RetryPolicy) *time.Duration { return &r.MaxBackoff }),
	"jitter":       valueField(func(r *RetryPolicy) *float64 { return &r.Jitter }),
	"on":           valueField(func(r *RetryPolicy) *[]string { return &r.On }),
}

var breakerFields = map[string]fieldDecoder[*BreakerPolicy]{
	"failures": valueField(func(b *BreakerPolicy) *int { return &b.Failures }),
	"open_for": durationField(func(b *BreakerPolicy) *time.Duration { return &b.OpenFor }),
}

var authFields = map[string]fieldDecoder[*Auth]{
	"type":       stringField(func(a *Auth) *string { return &a.Type }),
	"header":     stringField(func(a *Auth) *string { return &a.Header }),
	"token_env":  stringField(func(a *Auth) *string { return &a.TokenEnv }),
	"token_file": stringField(func(a *Auth) *string { return &a.TokenFile }),
}

var identityFields = map[string]fieldDecoder[*IdentityConfig]{
	"hmac_key_env":  stringField(func(c *IdentityConfig) *string { return &c.HMACKeyEnv }),
	"hmac_key_file": stringField(func(c *IdentityConfig) *string { return &c.HMACKeyFile }),
}

var accessFields = map[string]fieldDecoder[*Access]{
	"corps":       valueField(func(a *Access) *[]string { return &a.Corps }),
	"channels":    valueField(func(a *Access) *[]string { return &a.Channels }),
	"accounts":    valueField(func(a *Access) *[]string { return &a.Accounts }),
	"users":       valueField(func(a *Access) *[]string { return &a.Users }),
	"departments": valueField(func(a *Access) *[]string { return &a.Departments }),
	"chats":       valueField(func(a *Access) *[]string { return &a.Chats }),
}

var confirmFields = map[string]fieldDecoder[*ConfirmPolicy]{
	"prompt": stringField(func(c *ConfirmPolicy) *string { return &c.Prompt }),
}

var triggerFields = map[string]fieldDecoder[*Triggers]{
	"always":          valueField(func(t *Triggers) *bool { return &t.Always }),
	"intent_contains": valueField(func(t *Triggers) *[]string { return &t.IntentContains }),
	"intent_regex":    valueField(func(t *Triggers) *[]string { return &t.IntentRegex }),
}

var mcpFields = map[string]fieldDecoder[*MCPConfig]{
	"tool":    stringField(func(m *MCPConfig) *string { return &m.Tool }),
	"command": stringField(func(m *MCPConfig) *string { return &m.Command }),
	"args":    valueField(func(m *MCPConfig) *[]string { return &m.Args }),
}

var commandFields = map[string]fieldDecoder[*CommandConfig]{
	"path":             stringField(func(c *CommandConfig) *string { return &c.Path }),
	"argv":             valueField(func(c *CommandConfig) *[]string { return &c.Argv }),
	"max_output_bytes": valueField(func(c *CommandConfig) *int { return &c.MaxOutputBytes }),
	"end_of_options": func(c *CommandConfig, n *yaml.Node, _ map[string]int) error {
		var insert bool
		if err := n.Decode(&insert); err != nil || n.Tag != "!!bool" {
			return errors.New("must be true or false")
		}
		c.NoEndOfOptions = !insert
		return nil
	},
}

// decodeIdentity accepts `identity: none` (send the identity unsigned, on
// purpose) or a mapping naming the key.
func decodeIdentity(s *Skill, n *yaml.Node, lines map[string]int) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "none" {
			return errors.New(`must be "none" or a mapping with hmac_key_env or hmac_key_file`)
		}
		s.Identity.None = true
		return nil
	}
	return decodeMapping(&s.Identity, n, identityFields, "identity.", lines)
}

// decodeConfirm accepts `confirm: true|false` or a mapping with a prompt
// (which implies true).
func decodeConfirm(s *Skill, n *yaml.Node, lines map[string]int) error {
	s.Confirm = &ConfirmPolicy{}
	if n.Kind == yaml.ScalarNode {
		if n.Tag != "!!bool" {
			return errors.New("must be true, false or a mapping with a prompt")
		}
		return n.Decode(&s.Confirm.Required)
	}
	s.Confirm.Required = true
	return decodeMapping(s.Confirm, n, confirmFields, "confirm.", lines)
}

func stringField[T any](field func(T) *string) fieldDecoder[T] {
	return func(dst T, n *yaml.Node, _ map[string]int) error { return decodeString(n, field(dst)) }
}

func decodeString(n *yaml.Node, dst *string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return errors.New("must be a string")
	}
	*dst = n.Value
	return nil
}

// valueField decodes a scalar, list or map of plain values with yaml.v3's
// own rules, naming the wanted shape when the value does not fit.
func valueField[T, V any](field func(T) *V) fieldDecoder[T] {
	return func(dst T, n *yaml.Node, _ map[string]int) error {
		var v V
		if err := n.Decode(&v); err != nil || n.Tag == "!!null" {
			return fmt.Errorf("must be %s", shapeOf[V]())
		}
		*field(dst) = v
		return nil
	}
}

func shapeOf[V any]() string {
	switch any(*new(V)).(type) {
	case bool, *bool:
		return "true or false"
	case int:
		return "an integer"
	case float64:
		return "a number"
	case []string:
		return "a list of strings"
	case []int:
		return "a list of integers"
	case map[string]string:
		return "a mapping of strings to strings"
	default:
		return "a value of another shape"
	}
}

func durationField[T any](field func(T) *time.Duration) fieldDecoder[T] {
	return func(dst T, n *yaml.Node, _ map[string]int) error {
		var text string
		if err := decodeString(n, &text); err != nil {
			return err
		}
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("want a duration such as 10s or 1m30s: %w", err)
		}
		*field(dst) = d
		return nil
	}
}

// decodeParameters turns the YAML schema into JSON. Maps are marshalled with
// sorted keys, so the schema the model sees is byte-stable between starts
// (prompt caches key on the exact bytes).
func decodeParameters(s *Skill, n *yaml.Node, _ map[string]int) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("must be a JSON Schema object: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("must be a JSON Schema object")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("must be a JSON Schema object: %w", err)
	}
	s.Parameters = raw
	return nil
}
