// Package gpu finds the GPUs of the box selmix runs on and places
// processes on them: it reads CUDA_VISIBLE_DEVICES, or asks nvidia-smi
// (with a deadline: a hung nvidia-smi must not hang selmix; a missing one
// means no GPUs), checks a --gpus list against what it found, cuts the
// GPUs into groups of N per member and hands the groups out from a pool
// (a member takes a free group and gives it back when it ends).
//
// A GPU is named as CUDA_VISIBLE_DEVICES names it: an index ("3"), a UUID
// ("GPU-8f2c…") or a MIG id ("MIG-…", "MIG-GPU-…/1/0"). The ids of a box
// found by nvidia-smi are its indices.
package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"selmix/internal/capped"
	"selmix/internal/safetext"
)

// EnvVisible is the variable CUDA (and so PyTorch) reads to choose the
// GPUs a process sees; EnvOrder is the one that says how it numbers them.
const (
	EnvVisible = "CUDA_VISIBLE_DEVICES"
	EnvOrder   = "CUDA_DEVICE_ORDER"
)

// Deadline bounds every nvidia-smi call (a variable for tests).
var Deadline = 10 * time.Second

// MaxGPUs bounds the GPUs of one box (and the entries read from outside).
const MaxGPUs = 64

// Sources of a box's GPUs.
const (
	FromEnv = EnvVisible
	FromSMI = "nvidia-smi"
)

// Box is the GPUs this process may use.
type Box struct {
	IDs    []string // as CUDA_VISIBLE_DEVICES names them
	UUIDs  []string // per ID where nvidia-smi said it, else ""
	Source string   // FromEnv, FromSMI, or "" when there are none
}

// Has reports whether id names one of b's GPUs, by ID or by UUID, and
// returns the ID it names.
func (b *Box) Has(id string) (string, bool) {
	for i, x := range b.IDs {
		if x == id || i < len(b.UUIDs) && b.UUIDs[i] != "" && b.UUIDs[i] == id {
			return x, true
		}
	}
	return "", false
}

// String names the box's GPUs and where they came from, for messages:
// "0, 1, 2, 3 (nvidia-smi)" or "none".
func (b *Box) String() string {
	if len(b.IDs) == 0 {
		return "none (" + EnvVisible + " unset and no nvidia-smi)"
	}
	return strings.Join(b.IDs, ", ") + " (" + b.Source + ")"
}

// ValidID reports whether s can be one entry of CUDA_VISIBLE_DEVICES: a
// device index, or a UUID or MIG id (letters, digits, '-', '/', ':', '.').
func ValidID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		return true
	}
	if !strings.HasPrefix(s, "GPU-") && !strings.HasPrefix(s, "MIG-") {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '/' || r == ':' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// ParseVisible reads a CUDA_VISIBLE_DEVICES value as CUDA does: the
// entries up to the first that is not a device id (so "0,-1,2" is just
// "0", and "" or "-1" is no GPU), at most MaxGPUs.
func ParseVisible(v string) []string {
	var out []string
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if !ValidID(e) || len(out) == MaxGPUs {
			break
		}
		out = append(out, e)
	}
	return out
}

// ParseList reads the GPU list of option opt ("--gpus"): comma-separated
// ids, none empty, none twice. The error is one line naming opt, the list
// cut to maxEcho bytes.
func ParseList(opt, v string) ([]string, error) {
	parts := strings.Split(v, ",")
	q := cut(v, maxEcho)
	if len(parts) > MaxGPUs {
		return nil, fmt.Errorf("%s %q: %d entries, at most %d", opt, q, len(parts), MaxGPUs)
	}
	var out []string
	for i, e := range parts {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return nil, fmt.Errorf("%s %q: entry %d is empty; want GPU ids such as 0,1 (or auto, or none)", opt, q, i+1)
		case !ValidID(e):
			return nil, fmt.Errorf("%s %q: %q is not a GPU id (an index, GPU-… or MIG-…); want e.g. 0,1 (or auto, or none)", opt, q, cut(e, maxEcho))
		}
		for _, x := range out {
			if x == e {
				return nil, fmt.Errorf("%s %q: GPU %s is given twice", opt, q, e)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// maxEcho bounds the bytes of a value a message repeats.
const maxEcho = 64

// MaxSMIOutput bounds what SMI reads of nvidia-smi's output: past it
// the call fails (a box's answer is a line per GPU, at most MaxGPUs).
const MaxSMIOutput = 4 << 20

// SMI runs nvidia-smi with args under Deadline, in a process group of its
// own that the deadline kills whole (a hung nvidia-smi's children must not
// outlive it). Its output is read up to MaxSMIOutput. A missing
// nvidia-smi is ErrNoSMI.
func SMI(ctx context.Context, args ...string) (string, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return "", ErrNoSMI
	}
	ctx, cancel := context.WithTimeout(ctx, Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that keeps its output open must not keep us waiting.
	cmd.WaitDelay = time.Second
	out := &capped.Buffer{Max: MaxSMIOutput}
	stderr := &capped.Buffer{Max: 4 << 10, Quiet: true}
	cmd.Stdout, cmd.Stderr = out, stderr
	err = cmd.Run()
	switch {
	case out.Over:
		return "", &smiBroken{fmt.Sprintf("nvidia-smi: its output passed %d MiB; stopped reading it", MaxSMIOutput>>20)}
	case err == nil:
		return out.String(), nil
	case ctx.Err() == context.DeadlineExceeded:
		return "", &smiBroken{fmt.Sprintf("nvidia-smi did not answer within %v", Deadline)}
	}
	msg := strings.TrimSpace(stderr.String() + " " + out.String())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" {
		msg = err.Error()
	}
	return "", fmt.Errorf("nvidia-smi: %s", safetext.Cut(msg, 200))
}

// smiBroken is an nvidia-smi that hung or wrote without end: an error,
// where one that fails (no driver, no device) means no GPUs.
type smiBroken struct{ msg string }

func (e *smiBroken) Error() string { return e.msg }

// ErrNoSMI is SMI's error when nvidia-smi is not on PATH.
var ErrNoSMI = errors.New("nvidia-smi is not on PATH")

// ParseSMI reads the output of `nvidia-smi --query-gpu=index,uuid
// --format=csv,noheader`: one "index, uuid" line per GPU.
func ParseSMI(out string) (ids, uuids []string, err error) {
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		idx, uuid, ok := strings.Cut(line, ",")
		idx, uuid = strings.TrimSpace(idx), strings.TrimSpace(uuid)
		if _, err := strconv.ParseUint(idx, 10, 16); !ok || err != nil {
			return nil, nil, fmt.Errorf("nvidia-smi line %d: %q is not \"index, uuid\"", n+1, cut(line, 60))
		}
		if !ValidID(uuid) {
			uuid = ""
		}
		if len(ids) == MaxGPUs {
			break
		}
		ids, uuids = append(ids, idx), append(uuids, uuid)
	}
	return ids, uuids, nil
}

// cut is s up to n bytes (on a whole character) and "…" when longer.
func cut(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// Discover finds the box's GPUs: CUDA_VISIBLE_DEVICES's entries where it
// is set (to "", none), else the GPUs nvidia-smi lists; none where there
// is no nvidia-smi, or it finds no GPU or no driver. An nvidia-smi that
// hangs, writes without end or prints what is not its list is an error.
func Discover(ctx context.Context) (*Box, error) {
	if v, ok := os.LookupEnv(EnvVisible); ok {
		ids := ParseVisible(v)
		b := &Box{IDs: ids, UUIDs: make([]string, len(ids))}
		if len(ids) > 0 {
			b.Source = FromEnv
		}
		return b, nil
	}
	out, err := SMI(ctx, "--query-gpu=index,uuid", "--format=csv,noheader")
	switch {
	case errors.Is(err, ErrNoSMI):
		return &Box{}, nil
	case errors.As(err, new(*smiBroken)):
		return nil, err
	case err != nil:
		// No devices found, no driver loaded: a box without GPUs.
		return &Box{}, nil
	}
	ids, uuids, err := ParseSMI(out)
	if err != nil {
		return nil, err
	}
	b := &Box{IDs: ids, UUIDs: uuids}
	if len(ids) > 0 {
		b.Source = FromSMI
	}
	return b, nil
}
