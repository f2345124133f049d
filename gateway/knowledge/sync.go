package knowledge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"
)

// The folder (knowledge.dir) is kept in step with the index: each
// regular file is a document, its source "folder:" and its path in the
// folder; a file beside it named like it plus ".yaml" (its sidecar) says
// what an operator would say with `hermes knowledge add`'s flags:
//
//	title: 差旅报销标准          # default: the file name without its extension
//	key: 差旅报销标准            # versions of one document share it; default the title
//	owner: 财务部
//	version: 2025版
//	effective: 2025-01-01        # YYYY-MM-DD
//	access: {corps: [ww-acme], departments: ["9"], users: [], chats: []}
//
// A sidecar and not front matter: PDF, DOCX and XLSX have no place for
// one, and one convention serves every format. The sidecar's bytes are
// hashed with the file's, so a changed audience is a new version.
const (
	folderSource = "folder:"
	sidecarExt   = ".yaml"
	// maxFolderFiles bounds the documents of one folder: a sync reads
	// and hashes each; a folder with more is not synced at all (nothing
	// removed), since which ones to leave out cannot be guessed.
	maxFolderFiles = 10_000
	// maxSidecarBytes bounds a sidecar: a few lines of YAML.
	maxSidecarBytes = 64 << 10
	// syncLock is the session advisory lock one sync holds, so that the
	// replicas (the periodic job, SIGHUP on any of them) sync one at a
	// time; a sync of an unchanged folder changes nothing.
	syncLock = "knowledge:sync"
)

// ErrRefused is a folder file left as it was: unreadable, hostile, too
// large, with a broken sidecar.
var ErrRefused = errors.New("knowledge: folder file refused")

// Synced is what a sync of the folder did; paths are the files' paths in
// the folder.
type Synced struct {
	Added, Changed, Removed []string
	Unchanged               int
	// Refused are the files left as they were (a changed one keeps its
	// previous version in the index, a new one is not added), each with
	// its reason (ErrRefused, and what refused it).
	Refused map[string]error
}

// sidecar is a folder file's sidecar.
type sidecar struct {
	Title     string `yaml:"title"`
	Key       string `yaml:"key"`
	Owner     string `yaml:"owner"`
	Version   string `yaml:"version"`
	Effective string `yaml:"effective"`
	Access    struct {
		Corps       []string `yaml:"corps"`
		Users       []string `yaml:"users"`
		Departments []string `yaml:"departments"`
		Chats       []string `yaml:"chats"`
	} `yaml:"access"`
}

// Sync brings the index in step with knowledge.dir: a new file is added,
// a changed one (its bytes or its sidecar) replaces its previous version
// in one transaction, a removed one's document is deleted with its
// passages and vectors. A refused file is logged by name with its reason
// and changes nothing else. The folder missing or unreadable, or holding
// more than maxFolderFiles documents, is an error and removes nothing.
// Replicas sync one at a time (an advisory lock).
//
// Errors: the folder's, a database error.
func (b *Base) Sync(ctx context.Context) (Synced, error) {
	out := Synced{Refused: map[string]error{}}
	if b.Cfg.Dir == "" {
		return out, nil
	}
	conn, err := b.Pool.Acquire(ctx)
	if err != nil {
		return out, fmt.Errorf("knowledge: sync: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, syncLock); err != nil {
		return out, fmt.Errorf("knowledge: sync: %w", err)
	}
	defer func() {
		// Unlocked even when ctx ended; a failure closes the connection,
		// which releases the lock too.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, syncLock); err != nil {
			conn.Conn().Close(uctx)
		}
	}()

	root, err := os.OpenRoot(b.Cfg.Dir)
	if err != nil {
		return out, fmt.Errorf("knowledge: sync %s: %w", b.Cfg.Dir, err)
	}
	defer root.Close()
	files, refused, err := folderFiles(root.FS())
	if err != nil {
		return out, fmt.Errorf("knowledge: sync %s: %w", b.Cfg.Dir, err)
	}
	indexed := map[string][]Document{}
	docs, err := scanDocs(b.Pool.Query(ctx, `SELECT `+docColumns+` FROM knowledge_documents d
		WHERE starts_with(source, $1)`, folderSource))
	if err != nil {
		return out, err
	}
	for _, d := range docs {
		p := strings.TrimPrefix(d.Source, folderSource)
		indexed[p] = append(indexed[p], d)
	}
	for p, why := range refused {
		out.Refused[p] = why
	}
	for _, p := range files {
		if err := b.syncFile(ctx, root, p, indexed[p], &out); err != nil {
			if !errors.Is(err, ErrRefused) {
				return out, err
			}
			out.Refused[p] = err
		}
	}
	present := make(map[string]bool, len(files))
	for _, p := range files {
		present[p] = true
	}
	for p, old := range indexed {
		if _, kept := out.Refused[p]; kept || present[p] {
			continue
		}
		if err := b.replace(ctx, nil, old); err != nil {
			return out, err
		}
		out.Removed = append(out.Removed, p)
	}
	sort.Strings(out.Removed)
	for p, why := range out.Refused {
		b.Log.Warn("knowledge: folder file refused; its index entry left as it was", "file", p, "err", why)
	}
	if len(out.Added)+len(out.Changed) > 0 {
		b.Fill(ctx)
	}
	return out, nil
}

// folderFiles are the documents' paths in the folder, sorted, and the
// entries refused by name (links, devices). Hidden entries are skipped,
// and sidecars are not documents.
func folderFiles(fsys fs.FS) ([]string, map[string]error, error) {
	var files []string
	refused := map[string]error{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			refused[p] = fmt.Errorf("%w: %s: %w", ErrRefused, p, err)
			return nil
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			refused[p] = fmt.Errorf("%w: %s: not a regular file (%s)", ErrRefused, p, d.Type())
		case strings.EqualFold(path.Ext(p), sidecarExt):
		default:
			if len(files) == maxFolderFiles {
				return fmt.Errorf("over %d files", maxFolderFiles)
			}
			files = append(files, p)
		}
		return nil
	})
	return files, refused, err
}

// syncFile adds p when it is new or changed; old are its documents now.
func (b *Base) syncFile(ctx context.Context, root *os.Root, p string, old []Document, out *Synced) error {
	n, err := b.readFolderFile(root, p)
	if err != nil {
		return err
	}
	// An unchanged file is not extracted again: a sync of a folder of
	// PDFs costs reading and hashing them.
	hash, key := n.hash(), cmp.Or(strings.TrimSpace(n.Key), strings.TrimSpace(n.Title))
	for _, o := range old {
		if o.Hash == hash && o.Key == key {
			out.Unchanged++
			return nil
		}
	}
	d, chunks, err := prepare(ctx, n, b.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	tx, err := b.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("knowledge: sync %s: %w", p, err)
	}
	defer tx.Rollback(ctx)
	a, err := addTx(ctx, tx, d, chunks)
	if err != nil {
		return err
	}
	if err := b.replace(ctx, tx, old); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("knowledge: sync %s: %w", p, err)
	}
	switch {
	case a.Unchanged: // the same version stored from another path
		out.Unchanged++
	case len(old) == 0:
		out.Added = append(out.Added, p)
	default:
		out.Changed = append(out.Changed, p)
	}
	return nil
}

// replace deletes old (a file's previous versions) in tx, or in a
// transaction of its own when tx is nil.
func (b *Base) replace(ctx context.Context, tx pgx.Tx, old []Document) error {
	if tx == nil {
		own, err := b.Pool.Begin(ctx)
		if err != nil {
			return fmt.Errorf("knowledge: sync: %w", err)
		}
		defer own.Rollback(ctx)
		if err := b.replace(ctx, own, old); err != nil {
			return err
		}
		if err := own.Commit(ctx); err != nil {
			return fmt.Errorf("knowledge: sync: %w", err)
		}
		return nil
	}
	for _, o := range old {
		if _, err := deleteTx(ctx, tx, o.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// readFolderFile reads p and its sidecar within media's size cap.
func (b *Base) readFolderFile(root *os.Root, p string) (NewDocument, error) {
	data, err := readCapped(root, p, b.maxBytes())
	if err != nil {
		return NewDocument{}, err
	}
	base := path.Base(p)
	n := NewDocument{Name: base, Data: data, Title: strings.TrimSuffix(base, path.Ext(base)),
		Source: folderSource + p, AddedBy: "folder", sidecar: []byte{}}
	meta, err := readCapped(root, p+sidecarExt, maxSidecarBytes)
	if errors.Is(err, fs.ErrNotExist) {
		n.Audience.Corps = b.Cfg.Corps
		return n, nil
	}
	if err != nil {
		return NewDocument{}, err
	}
	var sc sidecar
	dec := yaml.NewDecoder(bytes.NewReader(meta))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil && !errors.Is(err, io.EOF) {
		return NewDocument{}, fmt.Errorf("%w: %s%s: %w", ErrRefused, p, sidecarExt, err)
	}
	if sc.Effective != "" {
		if n.Effective, err = time.Parse(time.DateOnly, sc.Effective); err != nil {
			return NewDocument{}, fmt.Errorf("%w: %s%s: effective: want YYYY-MM-DD, got %q", ErrRefused, p, sidecarExt, sc.Effective)
		}
	}
	if sc.Title != "" {
		n.Title = sc.Title
	}
	n.Key, n.Owner, n.Version, n.sidecar = sc.Key, sc.Owner, sc.Version, meta
	n.Audience = Audience{Corps: sc.Access.Corps, Users: sc.Access.Users, Departments: sc.Access.Departments, Chats: sc.Access.Chats}
	if len(n.Audience.Corps) == 0 {
		n.Audience.Corps = b.Cfg.Corps
	}
	return n, nil
}

// readCapped reads p in root, refusing it past limit bytes.
func readCapped(root *os.Root, p string, limit int64) ([]byte, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRefused, p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRefused, p, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s: over %d bytes (media.max_bytes)", ErrRefused, p, limit)
	}
	return data, nil
}
