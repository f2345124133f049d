package console_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestExportCSVNeutralisesFormulasInEveryPart: a message whose text hides
// formulas after a ";" (the list separator of many locales), a tab or a
// line is exported so that, read back split any of those ways, no part
// starts like a formula (= + - @, or a tab or CR).
func TestExportCSVNeutralisesFormulasInEveryPart(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const attack = "x;=40+2;=cmd|' /C calc'!A0\t+1\n@SUM(A1)\r-2,=3"
	in := f.ch.Message("acc-1", "msg-formula-1", "lisi", "lisi", attack, false, false)
	if _, err := f.gw.Accept(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ch.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	today := time.Now().Format(time.DateOnly)
	admin := client(t)
	f.login(t, admin, adminUser, adminPass)
	status, body := get(t, admin, f.srv.URL+"/console/export.csv?what=conversations&from="+today+"&to="+today)
	if status != http.StatusOK {
		t.Fatalf("export: %d %s", status, body)
	}
	body = strings.TrimPrefix(body, "\ufeff")
	if !strings.Contains(body, "x;'=40+2;'=cmd|' /C calc'!A0") {
		t.Errorf("the message is not in the export, or not as expected:\n%s", body)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	formula := func(how, part string) {
		if part != "" && strings.ContainsRune("=+-@\t\r", rune(part[0])) {
			t.Errorf("read %s, a part starts like a formula: %q", how, part)
		}
	}
	for _, rec := range recs {
		for _, cell := range rec {
			for _, part := range strings.FieldsFunc(cell, func(r rune) bool { return strings.ContainsRune(";\t|,\n\r", r) }) {
				formula("cell by cell, split on ; tab | , and lines", part)
			}
			formula("cell by cell", cell)
		}
	}
	// The file as a spreadsheet of a ";" locale, or a paste of it, reads it.
	for _, sep := range []rune{';', '\t'} {
		r := csv.NewReader(strings.NewReader(body))
		r.Comma, r.LazyQuotes, r.FieldsPerRecord = sep, true, -1
		recs, err := r.ReadAll()
		if err != nil {
			t.Fatalf("read on %q: %v", sep, err)
		}
		for _, rec := range recs {
			for _, cell := range rec {
				formula("the file split on "+string(sep), cell)
			}
		}
	}
}
