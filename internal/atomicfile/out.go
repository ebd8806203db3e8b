package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Out writes what write writes to an output a person named (an export's
// FILE), as what that path is:
//
//   - "-" is stdout;
//   - a regular file or a new name is replaced atomically (Write);
//   - a symbolic link is written through, never replaced: the file it
//     points at is replaced atomically (a link to nothing is refused);
//   - a character device or a named pipe (/dev/stdout, /dev/null, a FIFO
//     a reader has open) is opened and written to as it is; a pipe with
//     no reader is refused rather than waited on;
//   - a directory or a socket is refused.
//
// Write, by contrast, replaces whatever path is: it is for the files
// selmix keeps, where a link must not lead a write elsewhere.
func Out(path string, stdout io.Writer, write func(w io.Writer) error) error {
	if path == "-" {
		bw := bufio.NewWriterSize(fullWriter{stdout}, 1<<16)
		if err := write(bw); err != nil {
			return fmt.Errorf("write standard output: %w", err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write standard output: %w", err)
		}
		return nil
	}
	lfi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Write(path, write)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fi := lfi
	if lfi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(path); err != nil {
			return fmt.Errorf("write %s: a symbolic link to a file that cannot be reached (%w); selmix writes through links and does not replace them", path, err)
		}
	}
	switch m := fi.Mode(); {
	case m.IsRegular() && lfi.Mode()&fs.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return Write(target, write)
	case m.IsRegular():
		return Write(path, write)
	case m&(fs.ModeCharDevice|fs.ModeNamedPipe) != 0:
		return writeSpecial(path, m, write)
	case m.IsDir():
		return fmt.Errorf("write %s: is a directory", path)
	}
	return fmt.Errorf("write %s: not a file selmix can write to (%v)", path, fi.Mode().Type())
}

// writeSpecial writes to the device or pipe at path as it is. A pipe is
// opened without blocking, so one nobody reads is an error at once.
func writeSpecial(path string, m fs.FileMode, write func(w io.Writer) error) (err error) {
	flag := os.O_WRONLY
	if m&fs.ModeNamedPipe != 0 {
		flag |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flag, 0)
	if errors.Is(err, syscall.ENXIO) {
		return fmt.Errorf("write %s: a named pipe that no process reads", path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", path, cerr)
		}
	}()
	bw := bufio.NewWriterSize(fullWriter{f}, 1<<16)
	if err := write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// OutIsFile reports whether Out writes path as a file (a new name, a
// regular file or a link to one), rather than to stdout, a device or a
// pipe: only then do files beside it make sense.
func OutIsFile(path string) bool {
	if path == "-" {
		return false
	}
	fi, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist) && !isLink(path) || err == nil && fi.Mode().IsRegular()
}

func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}
