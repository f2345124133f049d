package document

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/ledongthuc/pdf"
)

// pdfSlots bounds the PDF parses running at once, in this process. It is
// package state on purpose: a goroutine cannot be killed, so a parse that
// overran ParseTimeout keeps its slot until it notices the stop, and
// hostile files cannot pile up abandoned parses faster than they end.
var pdfSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// Caps on a PDF's page tree, which the library leaves to its caller.
const (
	maxTreeDepth = 64 // /Kids nesting; real trees are a handful deep
)

type pdfOutcome struct {
	res Result
	err error
}

// extractPDF runs the parse in a goroutine so that Extract returns when
// the budget is spent even while the library is inside one object, and
// stops that goroutine at its next read (pdfFile) or token (pdfText).
func extractPDF(ctx context.Context, in input, lim Limits) (Result, error) {
	v := pdfView(in.data)
	if err := checkStructure(v); err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, ctxErr(ctx)
	}
	select {
	case pdfSlots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctxErr(ctx)
	}
	stop := new(atomic.Bool)
	done := make(chan pdfOutcome, 1)
	go func() {
		defer func() { <-pdfSlots }()
		var o pdfOutcome
		defer func() {
			if p := recover(); p != nil {
				o = pdfOutcome{err: fmt.Errorf("%w: pdf: panic: %v", ErrCorrupt, p)}
			}
			done <- o
		}()
		o.res, o.err = parsePDF(ctx, v, lim, stop)
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		stop.Store(true)
		return Result{}, ctxErr(ctx)
	}
}

// parsePDF extracts page by page, in page-tree order, until the pages end,
// MaxChars is reached or the decoded-content budget is spent.
func parsePDF(ctx context.Context, v []byte, lim Limits, stop *atomic.Bool) (Result, error) {
	r, err := pdf.NewReader(newPDFFile(v, stop), int64(len(v)))
	if err != nil {
		switch {
		case stop.Load() || ctx.Err() != nil:
			return Result{}, ctxErr(ctx)
		case errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(err.Error(), "encryption"):
			return Result{}, fmt.Errorf("%w: pdf: %w", ErrEncrypted, err)
		}
		return Result{}, fmt.Errorf("%w: pdf: %w", ErrCorrupt, err)
	}
	x := newPDFText(ctx, stop, newSink(lim.MaxChars), lim.MaxUncompressed)
	// Text is rarely longer than the file (content streams are mostly
	// text); reserving that much spares the copies of a growing buffer.
	x.s.grow(min(lim.MaxChars, len(v)))
	w := &pageWalker{x: x, limit: objectCap(len(v))}
	var root pdf.Value
	if err := guard(func() { root = r.Trailer().Key("Root").Key("Pages") }); err != nil {
		return Result{}, x.classify(fmt.Errorf("%w: pdf: page tree: %w", ErrCorrupt, err))
	}
	declared := 0
	_ = guard(func() { declared = int(min(max(root.Key("Count").Int64(), 0), w.limit)) })
	complete, walkErr := w.walk(root)
	if err := x.abort(); err != nil {
		return Result{}, err
	}
	pages := w.pages
	if !complete {
		pages = max(pages, declared)
	}
	res := x.s.result()
	res.Pages = pages
	switch {
	case x.s.text > 0:
		return res, nil
	case walkErr != nil || x.pageErrs > 0 && x.pageErrs == w.pages:
		return Result{}, x.classify(fmt.Errorf("%w: pdf: %d of %d pages unreadable: %w", ErrCorrupt, x.pageErrs, w.pages, errors.Join(walkErr, x.firstErr)))
	case x.budgetOut:
		return Result{}, bombf("decoded content over %d bytes without text", lim.MaxUncompressed)
	case w.pages == 0:
		return Result{}, corruptf("no pages")
	}
	return Result{}, fmt.Errorf("%w: %d pages", ErrScanned, w.pages)
}

// guard runs f, turning a panic (the library reports malformed objects by
// panicking) into an error.
func guard(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

// pageWalker visits the page tree depth first without the library's
// Reader.Page, which walks from the root for every page (quadratic in the
// page count) and follows /Parent links that may loop. Inherited
// /Resources are carried down instead.
type pageWalker struct {
	x      *pdfText
	limit  int64 // nodes visited at most, which also ends /Kids cycles
	visits int64
	pages  int
}

type treeFrame struct {
	kids pdf.Value
	next int
	res  pdf.Value
}

// walk reports whether it reached the end of the tree, and the error that
// ended it early otherwise (nil when the text budget did).
func (w *pageWalker) walk(root pdf.Value) (bool, error) {
	var stack []treeFrame
	node, res := root, pdf.Value{}
	for {
		if w.x.done() {
			return false, nil
		}
		if w.visits++; w.visits > w.limit {
			return false, corruptf("page tree over %d nodes", w.limit)
		}
		var kids, ownRes pdf.Value
		var typ string
		var content bool
		if err := guard(func() {
			typ = node.Key("Type").Name()
			kids = node.Key("Kids")
			ownRes = node.Key("Resources")
			content = typ == "Page" || kids.Kind() != pdf.Array && node.Key("Contents").Kind() != pdf.Null
		}); err != nil {
			return false, fmt.Errorf("page tree: %w", err)
		}
		if !ownRes.IsNull() {
			res = ownRes
		}
		switch {
		case kids.Kind() == pdf.Array && typ != "Page":
			if len(stack) >= maxTreeDepth {
				return false, corruptf("page tree deeper than %d", maxTreeDepth)
			}
			stack = append(stack, treeFrame{kids: kids, res: res})
		case content:
			w.pages++
			w.x.page(w.pages, node, res)
		}
		// The next node: the next kid of the innermost unfinished frame.
		for {
			if len(stack) == 0 {
				return true, nil
			}
			f := &stack[len(stack)-1]
			if f.next < f.kids.Len() {
				if err := guard(func() { node = f.kids.Index(f.next) }); err != nil {
					return false, fmt.Errorf("page tree: %w", err)
				}
				f.next++
				res = f.res
				break
			}
			stack = stack[:len(stack)-1]
		}
	}
}
