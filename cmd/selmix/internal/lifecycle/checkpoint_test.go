package lifecycle

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs/runstest"
)

// copyRun copies the whole run id (checkpoints too) from root to a new
// root and returns that root.
func copyRun(t *testing.T, root, id string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(filepath.Join(dst, id), os.DirFS(filepath.Join(root, id))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dst, id, "lock"))
	return dst
}

// tearFinal cuts the final event of run id, so that it is unfinished
// (what a crash in its last moment leaves).
func tearFinal(t *testing.T, root, id string) {
	t.Helper()
	log := filepath.Join(root, id, "events.jsonl")
	st, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, st.Size()-20); err != nil {
		t.Fatal(err)
	}
}

// A newest checkpoint grown to 5 GB is named and passed over for the one
// before it by export-head and resume, within a limited address space;
// the resumed run ends exactly where the run did. (A damaged checkpoint
// passed over by fork, resume and export-head, and every checkpoint
// damaged, are app's TestDamagedCheckpointFallback, in process.)
func TestGrownCheckpointFallback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := sharedShortRun(t) // read only: each case works on a copy
	want := runstest.ReadOutcome(t, root, id)
	ckpt := func(root string, step string) string {
		return filepath.Join(root, id, "checkpoints", "step-0000"+step+".ckpt")
	}
	// The newest checkpoint grown to a 5 GB sparse file is passed over,
	// not read, under the 4 GB address space of the README's Slurm
	// example (reading it died with "fatal error: out of memory").
	grown := func(t *testing.T, damaged string) {
		t.Helper()
		if err := os.Truncate(ckpt(damaged, "300"), 5<<30); err != nil {
			t.Skip("no sparse 5 GB file here:", err)
		}
	}
	grownLine := func(root string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^damaged checkpoint ` + regexp.QuoteMeta(ckpt(root, "300")) +
			` \(not a valid selmix engine checkpoint: 5368709120 bytes, its header declares \d+\): using the one at step 250$`)
	}
	t.Run("export-head, newest grown to 5 GB", func(t *testing.T) {
		t.Parallel()
		damaged := copyRun(t, root, id)
		grown(t, damaged)
		out, code := selmixtest.CodeLimited(t, os.Environ(), "export-head", "--runs", damaged, id, "--out", filepath.Join(t.TempDir(), "h.npz"))
		if code != 0 || !grownLine(damaged).MatchString(out) {
			t.Errorf("exit %d, want 0 and the line %s:\n%s", code, grownLine(damaged), out)
		}
	})
	t.Run("resume, newest grown to 5 GB", func(t *testing.T) {
		t.Parallel()
		damaged := copyRun(t, root, id)
		tearFinal(t, damaged, id)
		grown(t, damaged)
		out, code := selmixtest.CodeLimited(t, os.Environ(), "resume", "-q", "--runs", damaged, id)
		if code != 0 || !grownLine(damaged).MatchString(out) || !strings.Contains(out, "resuming run "+id+" from step 250") {
			t.Fatalf("exit %d, want 0, the line %s and a resume from step 250:\n%s", code, grownLine(damaged), out)
		}
		runstest.SameOutcome(t, "resume past a grown checkpoint", runstest.ReadOutcome(t, damaged, id), want)
	})
}

// A run with a damaged event log, or a config.toml with a garbage line,
// is refused by fork and export-head as by every other reader (exit 2,
// one line): fork started a child run of it (exit 0) and export-head
// wrote a head.
func TestForkRefusesDamagedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := sharedShortRun(t)
	for _, c := range []struct {
		name, file string
		edit       func([]byte) []byte
		want       string
	}{
		{"events.jsonl line 4", "events.jsonl", func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines[3] = bytes.Replace(lines[3], []byte(`"kind"`), []byte(`"kin"`), 1)
			return bytes.Join(lines, nil)
		}, `events.jsonl:4 (byte `},
		{"config.toml garbage", "config.toml", func(b []byte) []byte { return append(b, "\x00garbage ]]\n"...) }, "config.toml: not a valid configuration: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			damaged := copyRun(t, root, id)
			path := filepath.Join(damaged, id, c.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, c.edit(b), 0o644)
			for _, args := range [][]string{{"fork", "-q", id}, {"export-head", id, "--out", filepath.Join(t.TempDir(), "h.npz")}} {
				out, code := selmixtest.Code(t, os.Environ(), append(args, "--runs", damaged)...)
				if out = strings.TrimSpace(out); code != 2 || strings.Contains(out, "\n") || !strings.Contains(out, c.want) {
					t.Errorf("%v: exit %d, output\n%s\nwant 2 and one line saying %q", args, code, out, c.want)
				}
			}
			if ents, _ := os.ReadDir(damaged); len(ents) != 1 {
				t.Errorf("the runs root holds %d entries after the refusals, want the damaged run only", len(ents))
			}
		})
	}
}

// rewriteCkpt rewrites the JSON of the checkpoint at path with edit and
// makes its checksum valid again: content no checksum catches.
func rewriteCkpt(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	jl := binary.LittleEndian.Uint32(b[8:])
	var m map[string]any
	if err := json.Unmarshal(b[12:12+jl], &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	js, _ := json.Marshal(m)
	out := append(append(slices.Clone(b[:8]), binary.LittleEndian.AppendUint32(nil, uint32(len(js)))...), js...)
	out = append(out, b[12+jl:len(b)-4]...)
	if err := os.WriteFile(path, binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A newest checkpoint with a valid checksum around impossible content
// (batch 0), or content the engine refuses only with the run's
// configuration (step past the run's end), is passed over: resume goes on
// from the one before to the result of an uninterrupted run, where it
// exited 1.
func TestResumePassesOverImpossibleCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := sharedShortRun(t)
	want := runstest.ReadOutcome(t, root, id)
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		line string
	}{
		{"batch 0", func(m map[string]any) { m["hyper"].(map[string]any)["batch"] = 0 }, "damaged checkpoint "},
		{"step past the end", func(m map[string]any) { m["step"], m["last_refresh"] = 100000, 100000 }, "refused checkpoint ("},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			damaged := copyRun(t, root, id)
			tearFinal(t, damaged, id)
			rewriteCkpt(t, filepath.Join(damaged, id, "checkpoints", "step-0000300.ckpt"), c.edit)
			out := selmixtest.Run(t, "resume", "-q", "--runs", damaged, id)
			if !strings.Contains(out, c.line) || !strings.Contains(out, "resuming run "+id+" from step 250") {
				t.Fatalf("resume did not pass the checkpoint over (%q) and go on from step 250:\n%s", c.line, out)
			}
			runstest.SameOutcome(t, "resume past an impossible checkpoint", runstest.ReadOutcome(t, damaged, id), want)
		})
	}
}

// A bit flipped in the best checkpoint is damage, exit 2 with one line
// naming it, from export-head --best and fork --at best (they exited 1;
// step checkpoints gave 2). Only the latest best is kept: there is none
// to fall back to.
func TestDamagedBestCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := sharedShortRun(t)
	damaged := copyRun(t, root, id)
	bests, _ := filepath.Glob(filepath.Join(damaged, id, "checkpoints", "best-*.ckpt"))
	if len(bests) != 1 {
		t.Fatalf("best checkpoints %v, want one", bests)
	}
	b, _ := os.ReadFile(bests[0])
	b[len(b)/2] ^= 0x40
	os.WriteFile(bests[0], b, 0o644)
	want := "selmix: damaged best checkpoint " + bests[0] + ": not a valid selmix engine checkpoint: checksum mismatch (truncated or corrupted)"
	for _, args := range [][]string{{"export-head", id, "--best", "--out", filepath.Join(t.TempDir(), "h.npz")}, {"fork", "-q", id, "--at", "best"}} {
		out, code := selmixtest.Code(t, os.Environ(), append(args, "--runs", damaged)...)
		if out = strings.TrimSpace(out); code != 2 || out != want {
			t.Errorf("%v: exit %d, output\n%s\nwant 2 and\n%s", args, code, out, want)
		}
	}
}
