package agent

import (
	"fmt"
	"testing"
)

// The held-out questions of issue #37, in rounds written after the
// work on items 1–3: their figures, not those of questions.json, say how
// the agent does on questions it was not fitted to. Round 1
// (testdata/catalog_large/heldout.json) was measured, and then the
// chit-chat test was improved on what it missed, so it no longer counts
// as held out; round 2 (heldout2.json) was written after that, measured,
// and its misses mended in turn, and so on: each round was written after
// the previous round's fixes and measured before any of its own. The
// last round is the held-out figure; the earlier ones stay as
// regression questions. Rounds 6 to 11 came with the chit-chat test
// decided by the request's shape (chitchat.go, chitchat_object.go): each
// round's first figures are in its commit. Round 11's misses were mended
// (a general question is advice, a text counted with its 一 dropped, the
// person joined to the asker read from the noun phrase); round 12 was
// written after that and measured once (commit a2026b0): chit-chat ran a
// skill 1/9 | 2/9 (offered tools 3/9), relabeled 1/6, unlabeled 0, not
// about others refused 0, recall 100%. Its misses were mended (a
// statement about the asker, a preference of address, 一般是怎样的, a record
// after 的), and round 13 was written after that, committed, and measured
// once (commit a8aa0cb): chit-chat ran a skill 3/9 | 3/9 (offered tools
// 4/9), relabeled 0/6, unlabeled 0, not about others refused 0, recall
// 100%. Its misses were mended but one (给实习生推荐几个小工具: 工具 is a
// word of the 500-skill catalog), and round 14 was written after that,
// committed, and measured once (commit ba3e5ae): chit-chat ran a skill
// 1/9 | 1/9 (offered tools 2/9), relabeled 2/6 | 2/6, unlabeled 0, not
// about others refused 0, step 1 14/15 | 14/15. Its misses were mended
// but the 运营部的Lily offering (not on offer in full: a matching miss, not
// whose data), and round 15 was written after that, committed, and
// measured once (commit 6ac026a): chit-chat ran a skill 1/9 | 1/9
// (offered tools 2/9), relabeled 0/6, unlabeled 0, not about others
// refused 0, recall 100%. Its misses were mended, and round 16 was written
// after that, committed, and measured once (commit f210b02): chit-chat ran
// a skill 2/9 | 2/9 (offered tools 2/9), relabeled 0/6, unlabeled 0, not
// about others refused 0, recall 100%. Colleagues by nickname and title (some
// with a model that writes "self" for them), ordinary questions about
// oneself, look-alike chit-chat and two-step requests with another verb on
// another object, measured like the benchmark (offering_large_bench_test.go).

var heldOutRounds = []string{"testdata/catalog_large/heldout.json", "testdata/catalog_large/heldout2.json",
	"testdata/catalog_large/heldout3.json", "testdata/catalog_large/heldout4.json",
	"testdata/catalog_large/heldout5.json", "testdata/catalog_large/heldout6.json",
	"testdata/catalog_large/heldout7.json", "testdata/catalog_large/heldout8.json",
	"testdata/catalog_large/heldout9.json", "testdata/catalog_large/heldout10.json",
	"testdata/catalog_large/heldout11.json", "testdata/catalog_large/heldout12.json",
	"testdata/catalog_large/heldout13.json", "testdata/catalog_large/heldout14.json",
	"testdata/catalog_large/heldout15.json", "testdata/catalog_large/heldout16.json"}

func loadHeldOut(tb testing.TB, file string) []largeQuestion {
	tb.Helper()
	return loadQuestionFile(tb, file)
}

// heldOutFigures are the figures the issue asks for, as one line.
func heldOutFigures(out largeOutcome) string {
	return fmt.Sprintf("step 1 %d/%d, step 2 %d/%d; chit-chat %d: offered tools %d, ran a skill %d; "+
		"about others %d: relabeled %d; personal results shown %d: unlabeled %d; not about others refused %d",
		out.stepHit[0], out.stepNeeded[0], out.stepHit[1], out.stepNeeded[1], out.chitchat, out.chitOffered, out.chitRan,
		out.other, out.relabeled, out.personal, out.unlabeled, out.selfRefused)
}

// BenchmarkOffering_HeldOut reports the held-out figures per round and
// catalog.
func BenchmarkOffering_HeldOut(b *testing.B) {
	for round, file := range heldOutRounds {
		qs := loadHeldOut(b, file)
		for _, n := range []int{100, 500} {
			b.Run(fmt.Sprintf("round%d/%d", round+1, n), func(b *testing.B) { benchHeldOut(b, n, qs) })
		}
	}
}

func benchHeldOut(b *testing.B, n int, qs []largeQuestion) {
	var out largeOutcome
	for b.Loop() {
		out = measureLarge(b, n, qs)
	}
	b.ReportMetric(100*float64(out.stepHit[1])/float64(max(1, out.stepNeeded[1])), "recall-step2%")
	b.ReportMetric(float64(out.chitRan), "chitchat-ran")
	b.ReportMetric(float64(out.relabeled), "relabeled")
	b.ReportMetric(float64(out.unlabeled), "unlabeled")
	b.ReportMetric(float64(out.selfRefused), "self-refused")
	b.Logf("%d held-out questions: %s", len(qs), heldOutFigures(out))
	for _, m := range out.misses {
		b.Logf("%s", m)
	}
}
