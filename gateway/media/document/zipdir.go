package document

import (
	"encoding/binary"
	"errors"
)

// The entry cap is checked here, on the zip's own bytes, before
// archive/zip sees them: zip.NewReader allocates a File (about 500 bytes
// with its name) for every central directory record it finds, so a 17 MB
// zip of 200,000 empty entries cost 125 MB before len(zr.File) could be
// compared with MaxEntries. Walking the records costs no allocation.
//
// The layout is APPNOTE.TXT (PKWARE's .ZIP File Format Specification)
// §4.3.12 (central directory header), §4.3.14-16 (ZIP64 end record and
// locator, end of central directory record). Where archive/zip's reading
// is looser than the specification, this follows archive/zip (its
// reader.go), since what matters is what it will allocate.

// Record sizes and signatures, APPNOTE.TXT §4.3.
const (
	zipEndLen       = 22 // end of central directory record without its comment
	zipEnd64LocLen  = 20 // ZIP64 end of central directory locator
	zipEnd64Len     = 56 // ZIP64 end of central directory record without its extensible data
	zipDirHeaderLen = 46 // central directory header without name, extra and comment

	zipEndSig      = 0x06054b50
	zipEnd64LocSig = 0x07064b50
	zipEnd64Sig    = 0x06064b50
	zipDirSig      = 0x02014b50
)

// zipEndSearch is how far from the end archive/zip looks for the end
// record (its last 65 KB: a 22-byte record and a comment of at most 65,535
// bytes).
const zipEndSearch = 65 * 1024

// errZipEnd: no end of central directory record archive/zip would accept.
var errZipEnd = errors.New("zip: no end of central directory record")

// zipEnd is what the end of a zip says about its central directory.
type zipEnd struct {
	records uint64 // entries declared (ZIP64's count when present)
	size    uint64 // bytes of the central directory
	offset  uint64 // where it starts, relative to base
	base    int64  // bytes before the archive (a self-extracting stub)
}

// readZipEnd reads the end of central directory record, and the ZIP64
// one where the classic record says so, as archive/zip does: the last
// signature in the last 65 KB whose comment fits, and the same base
// offset rule. It allocates nothing.
func readZipEnd(data []byte) (zipEnd, error) {
	p := -1
	for i := len(data) - zipEndLen; i >= 0 && i >= len(data)-zipEndSearch; i-- {
		if binary.LittleEndian.Uint32(data[i:]) != zipEndSig {
			continue
		}
		// archive/zip stops at the last signature; a comment running past
		// the end makes the file unreadable to it.
		if i+zipEndLen+int(binary.LittleEndian.Uint16(data[i+20:])) > len(data) {
			return zipEnd{}, errZipEnd
		}
		p = i
		break
	}
	if p < 0 {
		return zipEnd{}, errZipEnd
	}
	b := data[p:]
	e := zipEnd{
		records: uint64(binary.LittleEndian.Uint16(b[10:])),
		size:    uint64(binary.LittleEndian.Uint32(b[12:])),
		offset:  uint64(binary.LittleEndian.Uint32(b[16:])),
	}
	endOffset := int64(p)
	if e.records == 0xffff || e.size == 0xffff || e.offset == 0xffffffff {
		if q, ok := zipEnd64At(data, p); ok {
			r := data[q:]
			if q+zipEnd64Len > len(data) || binary.LittleEndian.Uint32(r) != zipEnd64Sig {
				return zipEnd{}, errZipEnd
			}
			e.records = binary.LittleEndian.Uint64(r[32:])
			e.size = binary.LittleEndian.Uint64(r[40:])
			e.offset = binary.LittleEndian.Uint64(r[48:])
			endOffset = int64(q)
		}
	}
	const maxInt64 = 1<<63 - 1
	if e.size > maxInt64 || e.offset > maxInt64 {
		return zipEnd{}, errZipEnd
	}
	e.base = endOffset - int64(e.size) - int64(e.offset)
	if o := e.base + int64(e.offset); o < 0 || o >= int64(len(data)) {
		return zipEnd{}, errZipEnd
	}
	return e, nil
}

// zipEnd64At is the offset of the ZIP64 end record that the locator just
// before the end record at p names, when there is a valid locator.
func zipEnd64At(data []byte, p int) (int, bool) {
	l := p - zipEnd64LocLen
	if l < 0 {
		return 0, false
	}
	b := data[l:]
	if binary.LittleEndian.Uint32(b) != zipEnd64LocSig || binary.LittleEndian.Uint32(b[4:]) != 0 ||
		binary.LittleEndian.Uint32(b[16:]) != 1 {
		return 0, false
	}
	q := binary.LittleEndian.Uint64(b[8:])
	if q > uint64(len(data)) {
		// archive/zip's ReadAt fails there: the file does not open.
		return len(data), true
	}
	return int(q), true
}

// zipRecords counts the central directory records archive/zip would
// read, stopping once it has counted past limit. archive/zip reads
// headers from the directory's start until one does not parse,
// whatever count the end record declares (it compares only the low 16
// bits), so the records are counted, not believed. Where archive/zip
// might start at either of two offsets (it drops a non-zero base when a
// header is found without it), both are counted and the larger kept: the
// count is never below what archive/zip will allocate.
func zipRecords(data []byte, e zipEnd, limit int) int {
	n := recordsFrom(data, e.base+int64(e.offset), limit)
	if e.base > 0 {
		n = max(n, recordsFrom(data, int64(e.offset), limit))
	}
	return n
}

// recordsFrom counts well-formed central directory headers from off, up
// to limit+1.
func recordsFrom(data []byte, off int64, limit int) int {
	n := 0
	for n <= limit && off >= 0 && off+zipDirHeaderLen <= int64(len(data)) {
		h := data[off:]
		if binary.LittleEndian.Uint32(h) != zipDirSig {
			break
		}
		off += zipDirHeaderLen + int64(binary.LittleEndian.Uint16(h[28:])) +
			int64(binary.LittleEndian.Uint16(h[30:])) + int64(binary.LittleEndian.Uint16(h[32:]))
		if off > int64(len(data)) {
			break // archive/zip: unexpected EOF, the record is not kept
		}
		n++
	}
	return n
}
