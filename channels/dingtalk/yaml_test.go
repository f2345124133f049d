package dingtalk_test

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlDecode decodes src strictly, as the gateway decodes a section.
func yamlDecode(src string, v any) error {
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	return dec.Decode(v)
}
