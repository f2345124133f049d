package skills

import (
	"embed"
	"io/fs"
)

// Samples holds the sample skills shipped in the binary, under "samples/".
// They talk to the demo backend (skills/demobackend) and sign the caller's
// identity with the key in HERMES_DEMO_HMAC_KEY.
//
//go:embed samples
var Samples embed.FS

// SamplesFS returns the sample skills rooted at the samples directory, ready
// for LoadDir.
func SamplesFS() fs.FS {
	sub, err := fs.Sub(Samples, "samples")
	if err != nil {
		panic("skills: embedded samples missing: " + err.Error()) // cannot happen: fixed at build time
	}
	return sub
}
