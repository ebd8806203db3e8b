package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs/runstest"
)

// The same damage to a run's files is the same exit code (2: a damaged or
// inconsistent file) and the same one-line message naming the file and
// the byte, from every command that reads the run; damage to the last G
// and P is found when the run is opened, not by replay disagreeing.
func TestDamageExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	const id = "20261123-1200-819c"
	src := filepath.Join(vizRuns, id)
	arrays, err := os.ReadFile(filepath.Join(src, "arrays.bin"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(b []byte, at int) []byte {
		b = bytes.Clone(b)
		b[at] ^= 0xff
		return b
	}
	for _, c := range []struct {
		name string
		edit func(name string, b []byte) []byte
		want *regexp.Regexp
	}{
		{"arrays.bin: a byte of the first record", func(name string, b []byte) []byte {
			if name == "arrays.bin" {
				return flip(b, 100)
			}
			return b
		}, regexp.MustCompile(`arrays\.bin: record at offset 0: corrupt: checksum mismatch`)},
		{"arrays.bin: the last G and P", func(name string, b []byte) []byte {
			if name == "arrays.bin" {
				return flip(b, len(b)-100)
			}
			return b
		}, regexp.MustCompile(`G and P of the refresh at step 200: .*arrays\.bin: record at offset \d+: corrupt: checksum mismatch`)},
		{"arrays.bin: truncated", func(name string, b []byte) []byte {
			if name == "arrays.bin" {
				return b[:len(b)-10]
			}
			return b
		}, regexp.MustCompile(fmt.Sprintf(`arrays\.bin: record at offset \d+: missing: the event says it ends at byte %d, the file has %d`, len(arrays), len(arrays)-10))},
		{"events.jsonl: a line in the middle", func(name string, b []byte) []byte {
			if name == "events.jsonl" {
				lines := bytes.SplitAfter(b, []byte("\n"))
				lines[3] = bytes.Replace(lines[3], []byte(`"kind"`), []byte(`"kin"`), 1)
				return bytes.Join(lines, nil)
			}
			return b
		}, regexp.MustCompile(`events\.jsonl:4 \(byte \d+\): missing "kind"`)},
		{"config.toml: missing", func(name string, b []byte) []byte {
			if name == "config.toml" {
				return nil // runstest.Copy leaves the file out
			}
			return b
		}, regexp.MustCompile(`config\.toml: missing \(every run has one\)`)},
		{"config.toml: a garbage line", func(name string, b []byte) []byte {
			if name == "config.toml" {
				return append(bytes.Clone(b), "\x00garbage ]]\n"...)
			}
			return b
		}, regexp.MustCompile(`config\.toml: not a valid configuration: `)},
		{"events.jsonl: the last G and P point at the vectors' record", func(name string, b []byte) []byte {
			if name == "events.jsonl" {
				return bytes.Replace(b, []byte(`{"offset":14875,"length":910}`), []byte(`{"offset":14350,"length":525}`), 1)
			}
			return b
		}, regexp.MustCompile(`G and P of the refresh at step 200: .*arrays\.bin: record at offset 14350: no G and P in it \(the refresh refers to the wrong record\?\)`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{
				{"runs", "show", id}, {"runs", "show", "--json", id}, {"resume", "-q", id}, {"replay", id},
				{"open", id, "--print", "80x24"}, {"export", id, "--out", t.TempDir()},
				{"export", id, "--format", "tensorboard", "--out", t.TempDir()},
				{"fork", "-q", id}, {"export-head", id, "--out", filepath.Join(t.TempDir(), "h.npz")},
				{"runs", "compare", "--json", id, id}, {"runs", "export", "--csv", filepath.Join(t.TempDir(), "t.csv"), id},
			} {
				root := t.TempDir()
				runstest.Copy(t, src, filepath.Join(root, id), c.edit)
				out, code := selmixtest.Code(t, append(os.Environ(), "SELMIX_RUNS="+root), args...)
				out = strings.TrimSpace(out)
				if code != 2 || strings.Contains(out, "\n") || !c.want.MatchString(out) {
					t.Errorf("%v: exit %d, output\n%s\nwant exit 2 and one line matching %s", args, code, out, c.want)
				}
			}
		})
	}
}
