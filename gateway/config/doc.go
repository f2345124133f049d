// Package config is Hermes' configuration: the YAML tree of hermes.yaml,
// ${ENV} expansion, defaults and validation with errors naming the full
// key, and the one catalogue of the words Hermes says (Messages). It is
// read, never written back, and it builds nothing: the gateway and every
// package beside it read their section from here, and a chat platform's
// own section is decoded and validated by its package (channels.Platform),
// only kept here as YAML. It imports no Hermes package but those whose
// words it holds (agent.Messages, schedule.Words), so that every word is
// in one place.
//
// Files, by concept:
//   - The tree: config.go (Config and the pipeline's sections: server,
//     database, model, agent, skills, router, worker, groups; LoadConfig
//     and ParseConfig, ${ENV} expansion, defaults, Validate, DecodeSection
//     for the platforms), server.go (the listener timeouts), ops.go
//     (metrics, tracing, log and the OpenAI-compatible API's keys and
//     limits; BearerKey), reports.go (the reports: section and the
//     report sentences).
//   - The words: messages.go (Messages, the one catalogue: the pipeline's
//     sentences, confirm and command words, the agent's, the reports',
//     the console's overrides; each sentence keeps its default's verbs).
package config
