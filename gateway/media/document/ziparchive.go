package document

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"
)

// archive is a DOCX or XLSX zip whose caps were checked before any entry
// is inflated: the entry count (zipdir.go, before archive/zip read the
// directory), and the sum of the sizes the central directory declares.
// Entries are then read only through entryReader, which stops at the
// declared size, so a header that lies cannot make us inflate more than
// MaxUncompressed in total, and counts what it inflates against the
// document's markup budget (markup.go).
type archive struct {
	ctx    context.Context
	files  map[string]*zip.File // by lower-cased name: OPC part names ignore case
	budget int64                // bytes still allowed to be inflated
	markup *markupMeter
}

// openZip reads a zip's directory, once, after checking its entry count
// from the records themselves (zipRecords): a zip over maxEntries is
// refused with ErrBomb before archive/zip allocates anything for its
// entries. A zip whose end record does not read is left to archive/zip,
// which fails on it too.
func openZip(data []byte, maxEntries int) (*zip.Reader, error) {
	if end, err := readZipEnd(data); err == nil {
		if n := zipRecords(data, end, maxEntries); n > maxEntries {
			return nil, fmt.Errorf("%w: zip has over %d entries", ErrBomb, maxEntries)
		}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		// ErrInsecurePath is only advice for code that writes files by
		// entry name; we never do.
		return nil, fmt.Errorf("%w: zip: %w", ErrCorrupt, err)
	}
	return zr, nil
}

// openArchive checks the zip sniff opened against lim; text is the
// characters of text seen so far, for the markup budget.
func openArchive(ctx context.Context, in input, lim Limits, text func() int) (*archive, error) {
	zr := in.zip
	if zr == nil {
		return nil, fmt.Errorf("%w: zip: %w", ErrCorrupt, in.zipErr)
	}
	if len(zr.File) > lim.MaxEntries {
		return nil, fmt.Errorf("%w: zip has %d entries, limit %d", ErrBomb, len(zr.File), lim.MaxEntries)
	}
	a := &archive{ctx: ctx, files: make(map[string]*zip.File, len(zr.File)), budget: lim.MaxUncompressed,
		markup: &markupMeter{text: text}}
	var total uint64
	for _, f := range zr.File {
		total += f.UncompressedSize64
		if f.UncompressedSize64 > uint64(lim.MaxUncompressed) || total > uint64(lim.MaxUncompressed) {
			return nil, fmt.Errorf("%w: zip declares over %d uncompressed bytes", ErrBomb, lim.MaxUncompressed)
		}
		a.files[strings.ToLower(f.Name)] = f
	}
	return a, nil
}

// has reports whether the archive holds name.
func (a *archive) has(name string) bool {
	_, ok := a.files[strings.ToLower(name)]
	return ok
}

// open returns a reader of entry name's inflated bytes. The reader fails
// with ErrBomb past the declared size or the archive's budget, with
// ErrCorrupt on a short entry or a CRC mismatch, and with the ctx error
// once the parse budget is spent.
func (a *archive) open(name string) (io.Reader, error) {
	f, ok := a.files[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w: zip: missing %s", ErrCorrupt, name)
	}
	if f.Flags&0x1 != 0 {
		return nil, fmt.Errorf("%w: zip: %s is encrypted", ErrEncrypted, name)
	}
	raw, err := f.OpenRaw()
	if err != nil {
		return nil, fmt.Errorf("%w: zip: %s: %w", ErrCorrupt, name, err)
	}
	var rd io.Reader
	switch f.Method {
	case zip.Store:
		rd = raw
	case zip.Deflate:
		rd = flate.NewReader(raw)
	default:
		return nil, fmt.Errorf("%w: zip: %s uses compression method %d", ErrCorrupt, name, f.Method)
	}
	size := int64(f.UncompressedSize64)
	return &entryReader{a: a, name: name, f: f, rd: io.LimitReader(rd, size+1), left: size, crc: crc32.NewIEEE()}, nil
}

type entryReader struct {
	a    *archive
	name string
	f    *zip.File
	rd   io.Reader // the inflated bytes, limited to one past the declared size
	left int64     // declared bytes not read yet
	crc  hash.Hash32
	err  error
}

func (r *entryReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if err := r.a.ctx.Err(); err != nil {
		r.err = ctxErr(r.a.ctx)
		return 0, r.err
	}
	n, err := r.rd.Read(p)
	if int64(n) > r.left {
		r.err = fmt.Errorf("%w: zip: %s inflates past its declared %d bytes", ErrBomb, r.name, r.f.UncompressedSize64)
		return 0, r.err
	}
	r.left -= int64(n)
	r.a.budget -= int64(n)
	if r.a.budget < 0 {
		r.err = fmt.Errorf("%w: zip: over the uncompressed budget", ErrBomb)
		return 0, r.err
	}
	if err := r.a.markup.read(n); err != nil {
		r.err = err
		return 0, r.err
	}
	r.crc.Write(p[:n])
	switch {
	case errors.Is(err, io.EOF):
		if r.left != 0 {
			r.err = fmt.Errorf("%w: zip: %s is shorter than declared", ErrCorrupt, r.name)
		} else if r.crc.Sum32() != r.f.CRC32 && r.f.CRC32 != 0 {
			r.err = fmt.Errorf("%w: zip: %s fails its checksum", ErrCorrupt, r.name)
		} else {
			r.err = io.EOF
		}
	case err != nil:
		r.err = fmt.Errorf("%w: zip: %s: %w", ErrCorrupt, r.name, err)
	}
	if r.err != nil && r.err != io.EOF {
		return 0, r.err
	}
	return n, r.err
}

// part opens entry name as XML, its tokens counted by the markup budget.
func (a *archive) part(name string) (*xmlPart, error) {
	r, err := a.open(name)
	if err != nil {
		return nil, err
	}
	return newXMLPart(a.ctx, r, a.markup, name), nil
}

// xmlErr classifies an error from an XML decoder reading an entry: our
// reader's sentinels pass through, anything else is a syntax error.
func xmlErr(part string, err error) error {
	for _, s := range []error{ErrBomb, ErrTooComplex, ErrCorrupt, ErrTimeout, ErrEncrypted, context.Canceled} {
		if errors.Is(err, s) {
			return err
		}
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, part, err)
}
