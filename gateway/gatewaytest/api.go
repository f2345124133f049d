package gatewaytest

// RouterKey is the tool router's API key in ConfigYAML (zhangsan's).
const RouterKey = "test-router-key-0123456789"

// The OpenAI-compatible API's keys in OpenAIYAML.
const (
	APIKeyLisi = "test-openai-key-lisi-0123456789"
	APIKeyOnly = "test-openai-key-only-0123456789"
)

// OpenAIYAML turns on the OpenAI-compatible API (StartExtra's extra) with
// two keys: lisi's for every model, one limited to "hermes-lite".
const OpenAIYAML = `
openai_api:
  models: [hermes, hermes-lite]
  max_messages: 4
  keys:
    - key: ` + APIKeyLisi + `
      user_id: lisi
      name: open-webui
      corp_id: ` + CorpID + `
    - key: ` + APIKeyOnly + `
      user_id: wangwu
      models: [hermes-lite]
`
