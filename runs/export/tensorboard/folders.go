package tensorboard

import (
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"selmix/runs/export"
	"selmix/runs/export/tensorboard/tbpb/hparamspb"
)

// maxFolderName bounds a folder name made of a run's name, in bytes, so
// that with "_<id>" it stays well under file systems' 255.
const maxFolderName = 100

// earlier is a run's event file an earlier export left in the output
// directory.
type earlier struct {
	dir   string // its folder under the output
	id    string // the run's id: the base name of its session's model URI, the run's folder
	file  string // the event file's path
	start *hparamspb.SessionStartInfo
}

// scanEarlier finds the event files of ours in out's folders, in folder
// order. Files it cannot read are skipped: they are not ours or torn.
func scanEarlier(out string) []earlier {
	ents, err := os.ReadDir(out)
	if err != nil {
		return nil
	}
	var found []earlier
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(out, e.Name(), "events.out.tfevents.*"+runFileSuffix))
		for _, f := range files {
			start, err := readSessionStart(f)
			if err != nil || start.ModelUri == "" {
				continue
			}
			found = append(found, earlier{dir: e.Name(), id: filepath.Base(start.ModelUri), file: f, start: start})
		}
	}
	return found
}

// SafeName is a run's name as a folder name: letters, digits and
// "-_.+=,@" kept, anything else (a path separator, a space, a control
// character) and a leading dot become "_", cut to 100 bytes.
func SafeName(name string) string {
	var b strings.Builder
	for i, c := range name {
		if b.Len()+utf8.RuneLen(c) > maxFolderName {
			break
		}
		ok := unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("-_.+=,@", c)
		if !ok || (i == 0 && c == '.') {
			c = '_'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// folders names each run's folder under out: its name (SafeName; its id
// if it has none), with "_<id>" appended where another run given or
// left in out by an earlier export has the same name, ignoring case (on
// a file system that ignores case, "Same" and "SAME" are one folder), or
// where a folder of that name holds something else than selmix event
// files. Exporting the same runs again into out names the same folders.
func folders(out string, rs []export.Recorded, prev []earlier) []string {
	given := map[string]bool{}
	for _, r := range rs {
		given[r.Meta.ID] = true
	}
	base := func(r export.Recorded) string {
		if n := SafeName(r.Meta.Name); n != "" {
			return n
		}
		return r.Meta.ID
	}
	holders := map[string]map[string]bool{} // a name, case folded → the ids of the runs that have it
	have := func(name, id string) {
		name = fold(name)
		if holders[name] == nil {
			holders[name] = map[string]bool{}
		}
		holders[name][id] = true
	}
	ours := map[string]bool{} // the folders holding event files of ours
	for _, e := range prev {
		ours[e.dir] = true
		if !given[e.id] {
			// An earlier run's folder is its name, or its name and id.
			have(strings.TrimSuffix(e.dir, "_"+e.id), e.id)
		}
	}
	for _, r := range rs {
		have(base(r), r.Meta.ID)
	}
	dirs := make([]string, len(rs))
	for i, r := range rs {
		b := base(r)
		dirs[i] = b
		if len(holders[fold(b)]) > 1 || (!ours[b] && !emptyOrAbsent(filepath.Join(out, b))) {
			dirs[i] = b + "_" + r.Meta.ID
		}
	}
	return dirs
}

// emptyOrAbsent: nothing is at path, or an empty folder.
func emptyOrAbsent(path string) bool {
	ents, err := os.ReadDir(path)
	if err != nil {
		_, serr := os.Lstat(path)
		return os.IsNotExist(serr)
	}
	return len(ents) == 0
}

// fold is s with each rune replaced by the smallest one it equals
// ignoring case (unicode.SimpleFold): two names are equal ignoring case
// (strings.EqualFold) exactly when their folds are equal.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}
