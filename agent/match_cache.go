package agent

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/hermes-gw/hermes/skills"
)

// A matcher depends only on the catalog (the specs a caller may use, in
// order) and the colloquial table, and is read-only once built, so the
// runs of one catalog share one. Building it per run was a third of a
// run's own CPU time before its first model call, and a waiting run held
// its copy until it ended (BenchmarkFiveThousandWaiting: 5,000 runs at
// once). Catalogs are few (one per set of access rules the callers
// match); the cache is dropped whole past maxCachedMatchers, as the skill
// documents' is.
const maxCachedMatchers = 256

var (
	catalogSeed    = maphash.MakeSeed()
	matchers       sync.Map // catalogKey → *catalogMatcher
	matcherEntries atomic.Int64
)

// catalogMatcher is a cached matcher with the skill names it was built
// for, checked on every hit: a hash collision must not rank one catalog's
// skills with another's. The first run of a catalog builds it, once: a
// burst of runs starting together (agent_concurrency of them after a quiet
// spell) waits for that one build instead of each making its own.
type catalogMatcher struct {
	names []string
	once  sync.Once
	m     *matcher
}

// matcherFor returns the matcher of specs, built once per catalog. A
// deployment's own colloquial words make a table per run, so its
// matchers are not cached.
func matcherFor(specs []skills.Spec, colloquial colloquialTable) *matcher {
	if reflect.ValueOf(colloquial).UnsafePointer() != reflect.ValueOf(defaultColloquial).UnsafePointer() {
		return newMatcher(specs, colloquial)
	}
	key := catalogKey(specs)
	v, ok := matchers.Load(key)
	if !ok {
		if matcherEntries.Load() >= maxCachedMatchers {
			matchers.Clear()
			matcherEntries.Store(0)
		}
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name
		}
		var loaded bool
		if v, loaded = matchers.LoadOrStore(key, &catalogMatcher{names: names}); !loaded {
			matcherEntries.Add(1)
		}
	}
	c := v.(*catalogMatcher)
	if !sameNames(c.names, specs) {
		return newMatcher(specs, colloquial)
	}
	c.once.Do(func() { c.m = newMatcher(specs, colloquial) })
	return c.m
}

// catalogKey hashes every text matching reads of every spec, in order.
func catalogKey(specs []skills.Spec) uint64 {
	var h maphash.Hash
	h.SetSeed(catalogSeed)
	for _, s := range specs {
		writeDocParts(&h, s)
		h.WriteByte(1)
	}
	return h.Sum64()
}

func sameNames(names []string, specs []skills.Spec) bool {
	if len(names) != len(specs) {
		return false
	}
	for i, s := range specs {
		if names[i] != s.Name {
			return false
		}
	}
	return true
}
