package skills

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"
)

// defaultConfirmPrompt is shown when a skill requires confirmation but
// gives no prompt: the user must at least see what will run with what.
const defaultConfirmPrompt = `将以你的身份执行「{{.Skill}}」，参数：{{json .Args}}`

// templateData is what confirm prompts and command arguments see. Args are
// the model's validated arguments (model names, before parameter_map);
// Caller is the identity the gateway bound.
type templateData struct {
	Args   map[string]any
	Caller Caller
	Skill  string
}

var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// newTemplate compiles a prompt or argument template. A missing argument is
// an error rather than "<no value>": a prompt or command line must never
// silently lose a part.
func newTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("not a valid template: %w", err)
	}
	return t, nil
}

func newTemplateData(s *Skill, c Caller, args json.RawMessage) (templateData, error) {
	m := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber() // 12 stays 12, not 1.2e+01
	if err := dec.Decode(&m); err != nil {
		return templateData{}, err
	}
	return templateData{Args: m, Caller: c, Skill: s.Name}, nil
}

func render(t *template.Template, data templateData) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
