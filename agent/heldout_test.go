package agent

import (
	"fmt"
	"testing"
)

// The held-out questions of issue #37, in rounds written after the
// work on items 1–3: their figures, not those of questions.json, say how
// the agent does on questions it was not fitted to. Each round was
// written after the previous round's fixes, committed before it was run,
// and measured once; then its misses were mended, so it no longer counts
// as held out and stays as regression questions. The last round is the
// held-out figure. Colleagues by nickname and title (some with a model
// that writes "self" for them), ordinary questions about oneself, look-
// alike chit-chat and two-step requests with another verb on another
// object, measured like the benchmark (offering_large_bench_test.go).
//
// Rounds 6 to 11 came with the chit-chat test decided by the request's
// shape (chitchat.go, chitchat_object.go); each round's first figures are
// in its commit. From round 12, first figures at 100 | 500 skills
// (chit-chat ran a skill of 9; relabeled of 6; unlabeled and not about
// others refused were 0 in every round):
//
//   - 12 (a2026b0): ran 1 | 2, relabeled 1 | 1, recall 100%;
//   - 13 (a8aa0cb): ran 3 | 3, relabeled 0, recall 100%;
//   - 14 (ba3e5ae): ran 1 | 1, relabeled 2 | 2, step 1 14/15;
//   - 15 (6ac026a): ran 1 | 1, relabeled 0, recall 100%;
//   - 16 (f210b02): ran 2 | 2, relabeled 0, recall 100%;
//   - 17 (32865e8), the held-out figure: ran 0 | 0 (offered tools 1 | 1),
//     relabeled 0, recall 100%; not mended after (今天地铁挤死了 was
//     offered tools, none ran).
//
// Left unmended: 给实习生推荐几个小工具 (round 13: 工具 is a word of the
// 500-skill catalog) and the offering of 运营部的Lily请了几天假 (round 14:
// a matching miss, not whose data).

var heldOutRounds = []string{"testdata/catalog_large/heldout.json", "testdata/catalog_large/heldout2.json",
	"testdata/catalog_large/heldout3.json", "testdata/catalog_large/heldout4.json",
	"testdata/catalog_large/heldout5.json", "testdata/catalog_large/heldout6.json",
	"testdata/catalog_large/heldout7.json", "testdata/catalog_large/heldout8.json",
	"testdata/catalog_large/heldout9.json", "testdata/catalog_large/heldout10.json",
	"testdata/catalog_large/heldout11.json", "testdata/catalog_large/heldout12.json",
	"testdata/catalog_large/heldout13.json", "testdata/catalog_large/heldout14.json",
	"testdata/catalog_large/heldout15.json", "testdata/catalog_large/heldout16.json",
	"testdata/catalog_large/heldout17.json"}

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
