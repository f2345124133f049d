// Command hermes is the Hermes gateway: an AI agent inside the company's
// chat tools (WeCom, DingTalk, Feishu), with the company's own systems as
// skills. It is the wiring, and only that: it loads the configuration,
// opens the database, builds a gateway with the platforms and features it
// registers, and runs it or one of the tools beside it; what a message
// goes through lives in the packages it wires (gateway, channels, agent,
// skills).
//
//	hermes serve   --config hermes.yaml   run the gateway (callbacks, workers, delivery)
//	hermes migrate --config hermes.yaml   apply database migrations and exit
//	hermes chat    --config hermes.yaml   talk to the agent in the terminal
//	hermes demo                           everything on embedded defaults, with a scripted conversation
//	hermes skills check|import-openapi    validate skill definitions; draft skills from OpenAPI
//	hermes runs list|show                 find runs and print their traces
//	hermes admin create --user NAME       add a console account (password from the environment or stdin)
//	hermes reports list|add|run-now|...   manage scheduled reports
//	hermes words   [--config hermes.yaml] print every word Hermes says, as YAML
//	hermes memory  list|purge|export      see, delete or export an employee's memories (audited)
//	hermes doctor  --config hermes.yaml   check the setup against the world; print fixes
//	hermes version                        print the version
//	hermes help [command]                 this list, or a command's flags
//
// Files, by concept:
//   - The command line: main.go (the commands, dispatch, usage and exit
//     codes), platforms.go (the platforms and the features, newFeatures,
//     one line each: the one place a platform or a feature is wired in).
//   - Serving: serve.go (serve and migrate; the flags, loading and checking
//     a configuration, opening the database; the operators' pages added),
//     telemetry.go (the process log and the tracer provider).
//   - In the terminal: chat.go (the full pipeline for a person at a
//     terminal, through the console channel), demo.go (the scripted
//     demo conversation, its report and its embedded configuration),
//     pgtemp.go (the demo's database: DATABASE_URL, a local server, or a
//     throwaway one).
//   - Tools: doctor.go (`hermes doctor`: the checks and their table),
//     skills_cmd.go (`hermes skills`, and the subcommand dispatch the
//     others share), runs.go and runs_list.go (`hermes runs show` and
//     `list`), admin.go (`hermes admin create`), reports.go (`hermes
//     reports`), words.go (`hermes words`: the catalogue of words with the
//     values in effect), memory.go (`hermes memory`: an employee's
//     memories listed, purged or exported, each action audited).
package main
