package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"selmix/internal/atomicfile"
)

// openArrays opens dir's arrays.bin for appending and cuts it to end, the
// end of the last record an event refers to. A missing file is fine when
// no event refers to it (nil is returned); one shorter than end is an
// error: events would refer to records that are gone.
func openArrays(dir string, end int64) (*os.File, error) {
	path := filepath.Join(dir, arraysName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if errors.Is(err, os.ErrNotExist) && end == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case fi.Size() < end:
		f.Close()
		return nil, fmt.Errorf("%s: %d bytes, but the event log refers to records up to byte %d", path, fi.Size(), end)
	case fi.Size() > end:
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, fmt.Errorf("repair torn tail of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("repair torn tail of %s: %w", path, err)
		}
	}
	return f, nil
}

// AppendArrays is Append for an event that refers to records of
// arrays.bin: each element of records becomes one record, appended (and
// with sync fsynced) before the event, whose Arrays then lists them in
// order. A crash between the two leaves records no event refers to;
// readers never see them and OpenWriter cuts them. On any error both
// files are left as they were.
func (w *Writer) AppendArrays(kind string, step int, data any, records [][]Array, sync bool) (Event, error) {
	if kind == "" {
		return Event{}, errors.New("append event: empty kind")
	}
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return Event{}, fmt.Errorf("append %s event: %w", kind, err)
		}
		if string(b) != "null" {
			raw = b
		}
	}
	var blob []byte
	lens := make([]int64, len(records))
	for i, rec := range records {
		b, err := EncodeRecord(rec)
		if err != nil {
			return Event{}, fmt.Errorf("append %s event: %w", kind, err)
		}
		blob = append(blob, b...)
		lens[i] = int64(len(b))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return Event{}, ErrClosed
	}
	if w.broken != nil {
		return Event{}, fmt.Errorf("append to run %s: log needs repair (reopen the run): %w", w.id, w.broken)
	}
	ev := Event{Seq: w.seq + 1, Time: time.Now().Format(time.RFC3339Nano), Kind: kind, Step: step, Data: raw}
	arrStart := w.arrSize
	if len(records) > 0 {
		off := arrStart
		for _, n := range lens {
			ev.Arrays = append(ev.Arrays, Ref{Offset: off, Length: n})
			off += n
		}
		if err := w.writeArrays(blob, sync); err != nil {
			return Event{}, err
		}
	}
	// undoArrays takes the records back when their event cannot be
	// written: left in place they would shift every later record.
	undoArrays := func() {
		if len(records) == 0 {
			return
		}
		if err := w.arr.Truncate(arrStart); err != nil {
			w.broken = err
			return
		}
		w.arrSize = arrStart
	}
	line, err := encodeEvent(ev)
	if err != nil {
		undoArrays()
		return Event{}, fmt.Errorf("append %s event: %w", kind, err)
	}
	ev.Data = nil
	if raw != nil {
		// encodeEvent compacted raw; hand back what is on disk.
		back, _ := parseEvent(line[:len(line)-1], ev.Seq)
		ev.Data = back.Data
	}
	if undone, err := w.appendTo(w.log, w.size, line, sync, filepath.Join(w.dir, eventsName)); err != nil {
		if undone {
			undoArrays()
		}
		return Event{}, err
	}
	w.size += int64(len(line))
	w.seq = ev.Seq
	return ev, nil
}

// writeArrays appends blob to arrays.bin, creating the file when first
// needed. On error the file is cut back to where it was. Callers hold mu.
func (w *Writer) writeArrays(blob []byte, sync bool) error {
	path := filepath.Join(w.dir, arraysName)
	if w.arr == nil {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("append to %s: %w", path, err)
		}
		// A new name in the directory is durable only once the directory is.
		if err := atomicfile.SyncDir(w.dir); err != nil {
			f.Close()
			return fmt.Errorf("append to %s: %w", path, err)
		}
		w.arr = f
		if w.wrap != nil {
			w.arr = w.wrap(w.arr)
		}
	}
	if _, err := w.appendTo(w.arr, w.arrSize, blob, sync, path); err != nil {
		return err
	}
	w.arrSize += int64(len(blob))
	return nil
}
