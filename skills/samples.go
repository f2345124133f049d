package skills

import (
	"embed"
	"io/fs"
)

// Samples holds the sample skills shipped in the binary, under "samples/".
// They talk to the demo backend (skills/demobackend), whose HR and IT
// systems stand for two backends with a key each: hr_* skills sign with
// the key in SampleHRKeyEnv, it_* skills with the one in SampleITKeyEnv.
//
//go:embed samples
var Samples embed.FS

// The variables holding the sample skills' identity keys: one per backend.
const (
	SampleHRKeyEnv = "HERMES_DEMO_HR_KEY"
	SampleITKeyEnv = "HERMES_DEMO_IT_KEY"
)

// SamplesFS returns the sample skills rooted at the samples directory, ready
// for LoadDir.
func SamplesFS() fs.FS {
	sub, err := fs.Sub(Samples, "samples")
	if err != nil {
		panic("skills: embedded samples missing: " + err.Error()) // cannot happen: fixed at build time
	}
	return sub
}
