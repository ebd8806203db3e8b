package runs

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"selmix/core/experiment"
	"selmix/internal/atomicfile"
	"selmix/internal/boundedfile"
)

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("run writer is closed")

// Writer is the single process allowed to modify a run. It holds the run's
// lock from Create or OpenWriter until Close. Its methods are safe for
// concurrent use.
type Writer struct {
	mu   sync.Mutex
	dir  string
	id   string
	lock *os.File
	log  file  // events.jsonl, opened O_APPEND
	size int64 // length of the log's valid prefix
	seq  int   // last seq written
	// arr is arrays.bin, opened O_APPEND when first needed; arrSize is the
	// end of the last record an event refers to.
	arr     file
	arrSize int64
	meta    Meta
	keep    int
	// broken is set when the log may end in a partial line we could not
	// remove; further appends would bury it, so they are refused.
	broken error
	// wrap, if not nil, wraps each temp file of an atomic write; tests use
	// it (and rewrap the log) to inject write errors.
	wrap func(file) file
}

// Dir is the run directory.
func (w *Writer) Dir() string { return w.dir }

// ID is the run id.
func (w *Writer) ID() string { return w.id }

// Meta returns a copy of the current metadata.
func (w *Writer) Meta() Meta {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.meta.clone()
}

// Seq returns the seq of the last event written (0 if none).
func (w *Writer) Seq() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// SetKeep sets how many most recent checkpoints are kept (default
// DefaultKeep); n < 1 keeps all. Pinned checkpoints are always kept.
func (w *Writer) SetKeep(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keep = n
}

// newID returns a fresh id candidate: local time to the minute and 4 hex.
func newID() string {
	return time.Now().Format("20060102-1504") + "-" + randHex(2)
}

// randHex is n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Create makes a new run under root (created if needed) and returns its
// writer, holding the lock. meta's ID, Name and Created are set here;
// an empty Status becomes "running". configTOML must read as a recorded
// configuration (experiment.ReadRecorded).
//
// The run is made in a hidden folder of root (newPrefix), which List
// passes over, and renamed to its id once config.toml and run.json are
// in it: a crash at any moment leaves either no run or a complete one,
// never a folder named like a run without run.json. Hidden folders a
// crash left behind are removed here (removeStale).
func Create(root, name, configTOML string, meta Meta) (*Writer, error) {
	if _, err := experiment.ReadRecorded(configTOML, configName); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	meta = meta.clone()
	if meta.Status == "" {
		meta.Status = StatusRunning
	}
	if meta.Format == 0 {
		meta.Format = Format
	}
	if !validStatus(meta.Status) {
		return nil, fmt.Errorf("create run: unknown status %q", meta.Status)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	removeStale(root)
	id := freeID(root)
	meta.ID, meta.Name = id, name
	meta.Created = time.Now().Format(time.RFC3339)
	if err := checkMeta(meta); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	tmp := filepath.Join(root, newPrefix+id+"-"+randHex(4))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	w, err := create(tmp, id, configTOML, meta)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create run %s: %w", id, err)
	}
	if err := w.publish(root); err != nil {
		w.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create run %s: %w", w.id, err)
	}
	return w, nil
}

// newPrefix starts the hidden name of a run folder being created.
const newPrefix = ".new-"

// removingPrefix starts the hidden name Remove gives a folder it deletes.
const removingPrefix = ".removing-"

// staleAge is how old a hidden folder of a creation or removal must be
// before another process takes it for the leftover of a crash.
const staleAge = 10 * time.Minute

// removeStale deletes, best effort, the hidden folders of creations and
// removals under root that a crash cut off: older than staleAge and not
// locked by a live process.
func removeStale(root string) {
	ents, err := readDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, newPrefix) && !strings.HasPrefix(n, removingPrefix) {
			continue
		}
		dir := filepath.Join(root, n)
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleAge {
			continue
		}
		if live, _ := IsLive(dir); live {
			continue
		}
		os.RemoveAll(dir)
	}
}

// freeID returns an id no folder of root has.
func freeID(root string) string {
	for i := 0; ; i++ {
		id := newID()
		if _, err := os.Lstat(filepath.Join(root, id)); errors.Is(err, os.ErrNotExist) || i == 100 {
			return id
		}
	}
}

// publish renames the new run's hidden folder to root/<id>. Should
// another process have taken the id meanwhile (rename never replaces a
// folder that holds anything), the run takes a fresh id, rewrites
// run.json and tries again.
func (w *Writer) publish(root string) error {
	for i := 0; ; i++ {
		dir := filepath.Join(root, w.id)
		err := os.Rename(w.dir, dir)
		if err == nil {
			w.dir = dir
			return atomicfile.SyncDir(root)
		}
		if !errors.Is(err, os.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.ENOTDIR) || i == 100 {
			return err
		}
		m := w.meta.clone()
		w.id = freeID(root)
		m.ID = w.id
		if err := w.writeMeta(m); err != nil {
			return err
		}
	}
}

// create fills a new run directory; run.json comes last.
func create(dir, id, configTOML string, meta Meta) (*Writer, error) {
	lock, err := acquireLock(dir, id)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, id: id, lock: lock, meta: meta, keep: DefaultKeep}
	fail := func(err error) (*Writer, error) {
		if w.log != nil {
			w.log.Close()
		}
		releaseLock(lock)
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, configName), []byte(configTOML), nil); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ckptDirName), 0o755); err != nil {
		return fail(err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, eventsName), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fail(err)
	}
	w.log = lf
	if err := w.writeMeta(meta); err != nil {
		return fail(err)
	}
	return w, nil
}

// OpenWriter resumes writing a run (id as for Open): it takes the lock,
// removes stale temp files, truncates a torn tail off the event log and
// continues its seq. A corrupt log (an invalid line before the last) is an
// error and nothing is changed.
func OpenWriter(root, id string) (*Writer, error) {
	name, err := resolve(root, id)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, name)
	lock, err := acquireLock(dir, name)
	if err != nil {
		return nil, err
	}
	w, err := openWriter(dir, name, lock)
	if err != nil {
		releaseLock(lock)
		return nil, err
	}
	return w, nil
}

func openWriter(dir, id string, lock *os.File) (*Writer, error) {
	meta, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, eventsName)
	var evs []Event
	var good, size int64
	switch f, n, err := boundedfile.Open(path, eventsFile); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		evs, _, good, err = parseEvents(f, path)
		f.Close()
		if err != nil {
			return nil, err
		}
		size = n
	}
	// arrays.bin may end in a record whose event never made it to the log
	// (a crash between the two writes): cut it, so the records written
	// next sit where an uninterrupted run has them.
	var arrEnd int64
	for _, ev := range evs {
		for _, r := range ev.Arrays {
			arrEnd = max(arrEnd, r.Offset+r.Length)
		}
	}
	af, err := openArrays(dir, arrEnd)
	if err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		closeFile(af)
		return nil, err
	}
	if good < size {
		if err := lf.Truncate(int64(good)); err != nil {
			lf.Close()
			return nil, fmt.Errorf("repair torn tail of %s: %w", path, err)
		}
		if err := lf.Sync(); err != nil {
			lf.Close()
			return nil, fmt.Errorf("repair torn tail of %s: %w", path, err)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, ckptDirName)} {
		if err := removeTemps(d); err != nil {
			lf.Close()
			closeFile(af)
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ckptDirName), 0o755); err != nil {
		lf.Close()
		closeFile(af)
		return nil, err
	}
	w := &Writer{dir: dir, id: id, lock: lock, log: lf, size: good, seq: len(evs), meta: meta, keep: DefaultKeep, arrSize: arrEnd}
	if af != nil {
		w.arr = af
	}
	return w, nil
}

// closeFile closes f if it is open.
func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// Append writes one event with the next seq; data is marshalled to JSON
// (nil means no data). With sync, the log is fsynced before returning, so
// the event survives a crash once Append returns nil. On any error the log
// is left as it was: a partial write is truncated away.
func (w *Writer) Append(kind string, step int, data any, sync bool) (Event, error) {
	return w.AppendArrays(kind, step, data, nil, sync)
}

// appendTo writes b at the end of f, size bytes long, and fsyncs it with
// sync. On error it cuts f back to size; undone is false if even that
// failed (w.broken is then set: f may end in a partial write).
func (w *Writer) appendTo(f file, size int64, b []byte, sync bool, path string) (undone bool, err error) {
	n, err := f.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if err == nil {
		return true, nil
	}
	if n > 0 {
		if terr := f.Truncate(size); terr != nil {
			w.broken = terr
			return false, fmt.Errorf("append to %s: %w (and could not undo the partial write: %v)", path, err, terr)
		}
	}
	return true, fmt.Errorf("append to %s: %w", path, err)
}

// SetMeta applies fn to a copy of the metadata and replaces run.json with
// the result atomically. The id cannot change; the status must be valid.
func (w *Writer) SetMeta(fn func(*Meta)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return ErrClosed
	}
	m := w.meta.clone()
	fn(&m)
	if m.ID != w.id {
		return fmt.Errorf("run %s: SetMeta cannot change the id to %q", w.id, m.ID)
	}
	if !validStatus(m.Status) {
		return fmt.Errorf("run %s: unknown status %q", w.id, m.Status)
	}
	if err := checkMeta(m); err != nil {
		return fmt.Errorf("run %s: %w", w.id, err)
	}
	return w.writeMeta(m)
}

// writeMeta stores m and, on success, makes it current. Callers hold mu
// (or own w exclusively). The tags and note are Annotate's: under the
// metadata lock, those on disk replace m's, so an annotation made while
// the run goes is never lost. If the lock cannot be had (another process
// holds it past metaLockWait), run.json is written anyway: the run must go
// on.
func (w *Writer) writeMeta(m Meta) error {
	if unlock, err := lockMeta(w.dir, metaLockWait); err == nil {
		defer unlock()
	}
	if a, err := readAnnotation(w.dir); err == nil {
		m.Tags, m.Note = slices.Clone(a.Tags), a.Note
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("run %s: encode metadata: %w", w.id, err)
	}
	if err := writeAtomic(filepath.Join(w.dir, metaName), append(b, '\n'), w.wrap); err != nil {
		return err
	}
	w.meta = m.clone()
	return nil
}

// WriteSummary stores summary.json atomically; b must be valid JSON.
func (w *Writer) WriteSummary(b []byte) error {
	if !json.Valid(b) {
		return fmt.Errorf("run %s: summary is not valid JSON", w.id)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return ErrClosed
	}
	return writeAtomic(filepath.Join(w.dir, summaryName), b, w.wrap)
}

// Close fsyncs and closes the log and releases the lock. It does not
// change the status: set it with SetMeta first.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return ErrClosed
	}
	err := w.log.Sync()
	if cerr := w.log.Close(); err == nil {
		err = cerr
	}
	w.log = nil
	if w.arr != nil {
		if cerr := w.arr.Close(); err == nil {
			err = cerr
		}
		w.arr = nil
	}
	if lerr := releaseLock(w.lock); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("close run %s: %w", w.id, err)
	}
	return nil
}
