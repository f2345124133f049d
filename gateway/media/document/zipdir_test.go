package document

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// zip64Of rewrites the end of a zip made by archive/zip (no comment) in
// the ZIP64 form: a ZIP64 end record and its locator before a classic
// record whose fields say "see ZIP64" (APPNOTE.TXT §4.3.14-16), so the
// seeds cover that path without 65,536 entries.
func zip64Of(data []byte) []byte {
	p := len(data) - zipEndLen
	end := data[p:]
	records := uint64(binary.LittleEndian.Uint16(end[10:]))
	size := uint64(binary.LittleEndian.Uint32(end[12:]))
	offset := uint64(binary.LittleEndian.Uint32(end[16:]))
	out := bytes.Clone(data[:p])
	rec := make([]byte, zipEnd64Len)
	binary.LittleEndian.PutUint32(rec, zipEnd64Sig)
	binary.LittleEndian.PutUint64(rec[4:], zipEnd64Len-12)
	binary.LittleEndian.PutUint16(rec[12:], 45)
	binary.LittleEndian.PutUint16(rec[14:], 45)
	binary.LittleEndian.PutUint64(rec[24:], records)
	binary.LittleEndian.PutUint64(rec[32:], records)
	binary.LittleEndian.PutUint64(rec[40:], size)
	binary.LittleEndian.PutUint64(rec[48:], offset)
	loc := make([]byte, zipEnd64LocLen)
	binary.LittleEndian.PutUint32(loc, zipEnd64LocSig)
	binary.LittleEndian.PutUint64(loc[8:], uint64(len(out)))
	binary.LittleEndian.PutUint32(loc[16:], 1)
	classic := make([]byte, zipEndLen)
	binary.LittleEndian.PutUint32(classic, zipEndSig)
	for _, i := range []int{8, 10} {
		binary.LittleEndian.PutUint16(classic[i:], 0xffff)
	}
	binary.LittleEndian.PutUint32(classic[12:], 0xffffffff)
	binary.LittleEndian.PutUint32(classic[16:], 0xffffffff)
	out = append(append(append(out, rec...), loc...), classic...)
	return out
}

// TestZipEnd: the end record and the records are read as archive/zip
// reads them, classic and ZIP64, with a stub before the archive, and a
// directory that holds more records than its end record declares.
func TestZipEnd(t *testing.T) {
	docx := sampleDOCX(t)
	many := zipOf(t, zipEntry{"a", "1"}, zipEntry{"b", "2"}, zipEntry{"c", "3"})
	lying := bytes.Clone(many)
	binary.LittleEndian.PutUint16(lying[len(lying)-zipEndLen+8:], 1)
	binary.LittleEndian.PutUint16(lying[len(lying)-zipEndLen+10:], 1)
	for _, tc := range []struct {
		name    string
		data    []byte
		records int // what zipRecords counts
	}{
		{"Classic", docx, 2},
		{"ZIP64", zip64Of(docx), 2},
		{"Stub", append([]byte("#!/bin/sh\nexit 0\n"), docx...), 2},
		// archive/zip reads all three (it compares 16 bits of the count
		// only after reading): so does zipRecords.
		{"CountLies", lying, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := readZipEnd(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if n := zipRecords(tc.data, e, 100); n != tc.records {
				t.Errorf("zipRecords = %d, want %d", n, tc.records)
			}
			if n := zipRecords(tc.data, e, 1); n != min(tc.records, 2) {
				t.Errorf("zipRecords with limit 1 = %d, want it to stop at 2", n)
			}
		})
	}
	if _, err := readZipEnd([]byte("PK\x03\x04 not a zip")); !errors.Is(err, errZipEnd) {
		t.Errorf("no end record: %v", err)
	}
}

// FuzzZipEnd: readZipEnd and zipRecords never panic, and never count
// fewer records than archive/zip then reads: the entry cap checked on
// their count holds for what archive/zip allocates.
func FuzzZipEnd(f *testing.F) {
	docx := sampleDOCX(f)
	f.Add(docx)
	f.Add(zip64Of(docx))
	f.Add(zip64Of(sampleXLSX(f)))
	f.Add(append([]byte("stub"), docx...))
	f.Add(manyEntriesZip(f, 40))
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, endErr := readZipEnd(data)
		n := 0
		if endErr == nil {
			n = zipRecords(data, e, len(data))
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return
		}
		if endErr != nil {
			t.Fatalf("archive/zip reads %d entries, readZipEnd fails: %v", len(zr.File), endErr)
		}
		if len(zr.File) > n {
			t.Fatalf("archive/zip reads %d entries, zipRecords counts %d", len(zr.File), n)
		}
	})
}
