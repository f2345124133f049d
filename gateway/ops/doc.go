// Package ops is what operators watch Hermes by, kept apart from the
// pipeline that it watches: the gateway records into it, and nothing here
// knows the gateway. What it reads of the running process (the pool, the
// connection states, whether the replica drains) is handed to it; it
// changes nothing and answers no message.
//
// Files, by concept:
//   - Watching: metrics.go (every Prometheus metric of one gateway:
//     callbacks, runs, model and skill calls, deliveries, held parts,
//     recovered panics; and the collectors read at each scrape: queue
//     depth, skill breakers), tracing.go (the two traces of a message, its
//     callback's and its run's, whose trace id is the run id, joined by a
//     link carried through the job queue's metadata).
//   - Checking: health.go (/healthz, the process, and /readyz: Postgres,
//     migrations, and the pipeline's state the gateway hands it),
//     doctor.go (the checks of `hermes doctor`: database, model endpoint,
//     each channel's self-check, each skill's endpoint or program).
//   - Listening: httpserver.go (NewHTTPServer, the bounds of every
//     listener: headers, request, idle time).
package ops
