// Package document turns a document an employee uploaded into text for an
// LLM prompt: PDF, DOCX, XLSX, CSV and plain text or Markdown, the kind
// sniffed from the bytes. Everything it reads is treated as hostile: every
// kind runs under a character budget (MaxChars), a wall-clock budget
// (ParseTimeout) and a cap on inflated bytes (MaxUncompressed), and every
// failure wraps one of the sentinel errors in document.go.
//
// PDF uses github.com/ledongthuc/pdf (pure Go, a maintained fork of
// rsc.io/pdf, no cgo, no external binaries; it has no tagged releases, so
// go.mod pins a pseudo-version) for the file's structure: cross-reference
// tables and streams, object streams, object resolution, stream filters,
// RC4/AES with the empty user password. It was chosen over pdfcpu because
// it reads objects lazily from an io.ReaderAt, so a large file costs little
// more than its text, where pdfcpu builds the whole object graph first and
// brings a much larger dependency tree. Its page and text layer
// (Page.GetPlainText) is not used: pdftext.go interprets content streams
// and pdffont.go reads fonts and ToUnicode maps, with bounded state and
// early stops (pdftext.go says why).
//
// The library trusts the file: some numbers in it size allocations or
// loops, and some object-stream layouts recurse without end, both of which
// end the process (out of memory, stack overflow) beyond any recover. So
// before the library sees a file, checkStructure (pdfguard.go) and
// objTable (pdfobjstm.go) read those parts at the offsets the library will
// and refuse what it could not survive.
//
// The PDF parse runs in a goroutine, so Extract returns at the deadline
// even while the library is inside one object. The goroutine is then told
// to stop: every read of the file (pdfFile), every read of a decoded
// stream (budgetReader) and every 1024 content tokens check the stop, so an
// abandoned parse ends at its next read, having inflated at most one
// read's worth (a few MB) more. At most max(2, GOMAXPROCS) PDF parses run
// at once (pdfSlots), abandoned ones included.
//
// Memory: a PDF costs about its text plus the library's per-object read
// buffers. BenchmarkExtractPDF20MB measures a 20 MB text PDF read whole at
// about 3× the file size in peak heap (GC garbage included) and under 1× in
// live memory; with the default MaxChars the parse stops after a few pages.
//
// Residual risks, PDF: within its time budget the library may allocate in
// proportion to what it inflates for one object inside a compressed object
// stream (a deflate bomb holding one huge array or string), since it
// decodes object streams itself with no cap; a /Prev or /Extends loop only
// costs time until the deadline; text in CID fonts without a ToUnicode map
// (Identity-H glyph ids) cannot be recovered and is reported as
// ErrScanned; reading order is content order, and spaces come from glyph
// positions and widths, so unusual layouts read imperfectly.
//
// DOCX and XLSX are read by hand with archive/zip and encoding/xml, each
// part streamed through a reader that stops at the size the zip declared
// (ziparchive.go; xlsx.go says why not excelize). The zip's directory is
// read once, after its entry count was checked on its own records
// (zipdir.go: archive/zip allocates for every entry before a cap could
// be applied). What parsing XML costs is per token, so every token and
// every inflated byte of a document counts against a markup budget
// (markup.go): markup without text is refused with ErrTooComplex after
// 64k tokens, and no document reads more than 400k tokens or 8 MB of XML;
// text read before the budget ran out is kept, marked truncated. The
// hostile files of BenchmarkHostileFiles (49 MB of empty XML in 120 KB,
// 200,000 entries in 17 MB) cost under 0.2 CPU-s and 40 MB each. CSV is encoding/csv with
// LazyQuotes; text must be UTF-8 (a BOM is fine), UTF-16 with a BOM, or
// GB18030/GBK, and is refused as binary when it holds NUL bytes or more
// than 1% control characters.
//
// Files, by concept: document.go (types, errors, Sniff, Extract), sink.go
// (the output budget), plaintext.go (text and CSV), zipdir.go (the end
// records and the entry count), ziparchive.go, markup.go (the markup
// budget and the counted XML reader), docx.go, xlsx.go, xlsxparts.go and
// xlsxcell.go (Office files), pdf.go (the parse
// goroutine and the page tree), pdfguard.go and pdfobjstm.go (checks
// before the library), pdflex.go (PDF tokens), pdfpage.go (one document's
// state: budgets, streams, separators), pdftext.go (content streams),
// pdffont.go (fonts and ToUnicode maps).
package document
