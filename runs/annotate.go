package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"selmix/internal/boundedfile"
	"selmix/internal/safetext"
)

// Limits on what a person may write about a run.
const (
	MaxTagLen  = 64   // bytes
	MaxNoteLen = 4096 // bytes
	// MaxAnnotation bounds the tags and note of one run together, as
	// run.json stores them (JSON-encoded), so that no number of tags can
	// push run.json past its own read bound (1 MiB).
	MaxAnnotation = 64 << 10 // bytes
)

// ErrAnnotationTooLarge is a change of tags or note refused because
// run.json would not hold it (MaxAnnotation, or run.json's bound).
var ErrAnnotationTooLarge = errors.New("too large for run.json")

// CheckTag reports why t cannot be a tag: tags are one word (no
// whitespace, no control characters: safetext.IsControl) of valid UTF-8, at most MaxTagLen
// bytes, so they can be listed space-separated and filtered on.
func CheckTag(t string) error {
	switch {
	case t == "":
		return errors.New("a tag cannot be empty")
	case len(t) > MaxTagLen:
		return fmt.Errorf("tag %q is %d bytes, at most %d", t, len(t), MaxTagLen)
	case !utf8.ValidString(t):
		return fmt.Errorf("tag %q is not valid UTF-8", t)
	case strings.IndexFunc(t, unicode.IsSpace) >= 0:
		return fmt.Errorf("tag %q contains whitespace", t)
	case safetext.Control(t) >= 0:
		return fmt.Errorf("tag %q contains a control character (bidirectional and zero-width ones included: a tag is shown in terminals)", t)
	}
	return nil
}

// CheckNote reports why s cannot be a note: valid UTF-8 of at most
// MaxNoteLen bytes with no control characters but newlines and tabs.
func CheckNote(s string) error {
	switch {
	case len(s) > MaxNoteLen:
		return fmt.Errorf("note is %d bytes, at most %d", len(s), MaxNoteLen)
	case !utf8.ValidString(s):
		return errors.New("note is not valid UTF-8")
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0:
		return errors.New("note contains a control character (only newlines and tabs are allowed)")
	}
	return nil
}

// Annotation is what a person wrote about a run.
type Annotation struct {
	Tags []string // sorted, without duplicates
	Note string
}

// HasTags reports whether m carries every one of tags.
func (m Meta) HasTags(tags ...string) bool {
	for _, t := range tags {
		if !slices.Contains(m.Tags, t) {
			return false
		}
	}
	return true
}

// Tagged keeps the runs of all that carry every one of tags (all of them
// when tags is empty), reusing all's array.
func Tagged(all []Run, tags []string) []Run {
	if len(tags) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(r Run) bool { return !r.Meta.HasTags(tags...) })
}

// Retag adds add to and removes remove from the tags of the run id
// designates, and sets its note when note is not nil (Annotate).
func Retag(root, id string, add, remove []string, note *string) (*Run, error) {
	return Annotate(root, id, func(a *Annotation) {
		a.Tags = append(a.Tags, add...)
		a.Tags = slices.DeleteFunc(a.Tags, func(t string) bool { return slices.Contains(remove, t) })
		if note != nil {
			a.Note = *note
		}
	})
}

// Annotate changes the tags and note of the run id designates (as for
// Open): edit gets them as run.json has them and changes them in place.
// The tags are then checked, sorted and deduplicated, and the note
// checked; an invalid one is an error and nothing is written.
//
// It works on a live run too. run.json is read, changed and replaced
// atomically under the run's metadata lock, which the run's Writer also
// takes when it replaces run.json, and the Writer keeps the tags and note
// it finds on disk: neither loses what the other wrote. Keys of run.json
// this selmix does not know are kept.
func Annotate(root, id string, edit func(a *Annotation)) (*Run, error) {
	name, err := resolve(root, id)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, name)
	unlock, err := lockMeta(dir, metaLockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	path := filepath.Join(dir, metaName)
	b, err := boundedfile.ReadFile(path, metaFile)
	if err != nil {
		return nil, err
	}
	m, err := parseMeta(b, path)
	if err == nil {
		err = checkFolder(m, dir)
	}
	if err != nil {
		return nil, err
	}
	a := Annotation{Tags: slices.Clone(m.Tags), Note: m.Note}
	edit(&a)
	for _, t := range a.Tags {
		if err := CheckTag(t); err != nil {
			return nil, err
		}
	}
	if err := CheckNote(a.Note); err != nil {
		return nil, err
	}
	a.Tags = sortedStrings(a.Tags)
	if !slices.Equal(a.Tags, sortedStrings(m.Tags)) || a.Note != m.Note {
		if n := annotationSize(a); n > MaxAnnotation && n > annotationSize(Annotation{Tags: m.Tags, Note: m.Note}) {
			return nil, fmt.Errorf("%s: %d tags and a note of %d bytes take %d bytes, more than the %d a run's tags and note may take together: %w",
				path, len(a.Tags), len(a.Note), n, MaxAnnotation, ErrAnnotationTooLarge)
		}
		out, err := setAnnotation(b, a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if int64(len(out)) > metaFile.Max && len(out) > len(b) {
			return nil, fmt.Errorf("%s: the change would make it %d bytes, more than the %d run.json may hold: %w",
				path, len(out), metaFile.Max, ErrAnnotationTooLarge)
		}
		if err := writeAtomic(path, out, nil); err != nil {
			return nil, err
		}
		m.Tags, m.Note = a.Tags, a.Note
	}
	live, pid := IsLive(dir)
	return &Run{Dir: dir, Meta: m, Live: live, Pid: pid}, nil
}

// setAnnotation returns run.json content b with its tags and note
// replaced by a's, every other key kept as it was.
func setAnnotation(b []byte, a Annotation) ([]byte, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, err
	}
	delete(keys, "tags")
	delete(keys, "note")
	if len(a.Tags) > 0 {
		keys["tags"], _ = json.Marshal(a.Tags)
	}
	if a.Note != "" {
		keys["note"], _ = json.Marshal(a.Note)
	}
	out, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// annotationSize is how many bytes a's tags and note take in run.json.
func annotationSize(a Annotation) int {
	n := 0
	if len(a.Tags) > 0 {
		b, _ := json.Marshal(a.Tags)
		n += len(b)
	}
	if a.Note != "" {
		b, _ := json.Marshal(a.Note)
		n += len(b)
	}
	return n
}

// readAnnotation returns the tags and note run.json in dir holds now.
func readAnnotation(dir string) (Annotation, error) {
	m, err := readMeta(dir)
	if err != nil {
		return Annotation{}, err
	}
	return Annotation{Tags: m.Tags, Note: m.Note}, nil
}

// sortedStrings returns s sorted, without duplicates; nil if empty.
func sortedStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// metaLockWait bounds how long an update of run.json waits for another
// one; each holds the lock for one read and one atomic write.
const metaLockWait = 10 * time.Second

// lockMeta takes the metadata lock of run dir: an exclusive flock on the
// directory itself, so it needs no file of its own and a crash releases
// it. It waits at most wait (polling, so a signal is never held up by a
// blocked system call) and returns the function that releases it.
func lockMeta(dir string, wait time.Duration) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing drops the flock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s: run.json is being updated by another process (waited %v)", dir, wait)
			}
			return nil, fmt.Errorf("%s: lock run.json: %w", dir, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
