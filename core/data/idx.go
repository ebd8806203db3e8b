package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"selmix/internal/boundedfile"
)

// DefaultFashionMNISTDir is where Debian's dataset-fashion-mnist package
// installs the IDX files.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// FashionMNISTClasses are the Fashion-MNIST class names in label order.
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// IDX type code for unsigned bytes, the only element type the image and
// label files use.
const idxUbyte = 0x08

// idxChunk is how much is read at a time, so a forged header promising
// gigabytes costs only as much memory as the data actually present.
const idxChunk = 1 << 20

// openIDX returns a reader over the IDX bytes of r, transparently
// decompressing gzip (detected by its magic bytes 1f 8b).
func openIDX(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("idx: empty or truncated file (no header)")
		}
		return nil, fmt.Errorf("idx: %w", err)
	}
	if magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("idx: bad gzip stream: %w", err)
		}
		return zr, nil
	}
	return br, nil
}

// readIDXHeader reads the magic and dimensions, requiring unsigned-byte data
// with want dimensions.
func readIDXHeader(r io.Reader, want int) ([]int, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, fmt.Errorf("idx: truncated header: %w", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("idx: bad magic % x (want 00 00 08 %02x)", magic, want)
	}
	if magic[2] != idxUbyte {
		return nil, fmt.Errorf("idx: element type 0x%02x, want 0x08 (unsigned byte)", magic[2])
	}
	if int(magic[3]) != want {
		return nil, fmt.Errorf("idx: %d dimensions, want %d", magic[3], want)
	}
	dims := make([]int, want)
	total := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(r, binary.BigEndian, &d); err != nil {
			return nil, fmt.Errorf("idx: truncated header (dimension %d): %w", i, err)
		}
		dims[i] = int(d)
		if d > 0 && total > maxElems/int(d) {
			return nil, fmt.Errorf("idx: dimensions %v too large", dims[:i+1])
		}
		total *= int(d)
	}
	return dims, nil
}

// readIDXData reads exactly n bytes of element data and checks that nothing
// follows them.
func readIDXData(r io.Reader, n int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(min(n, idxChunk))
	got, err := io.CopyN(&buf, r, int64(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("idx: truncated data: header promises %d bytes, found %d", n, got)
		}
		return nil, fmt.Errorf("idx: reading data: %w", err)
	}
	var extra [1]byte
	k, err := io.ReadFull(r, extra[:])
	if k > 0 {
		return nil, fmt.Errorf("idx: trailing bytes after the %d data bytes the header promises", n)
	}
	if !errors.Is(err, io.EOF) {
		// gzip verifies its checksum only at the end of the stream.
		return nil, fmt.Errorf("idx: after data: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadIDXImages reads an IDX3 unsigned-byte image file (gzip or plain) and
// returns the images scaled to [0,1] (value/255), one row of rows·cols
// values per image.
func ReadIDXImages(r io.Reader) (x []float32, n, rows, cols int, err error) {
	ir, err := openIDX(r)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	dims, err := readIDXHeader(ir, 3)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	n, rows, cols = dims[0], dims[1], dims[2]
	if rows == 0 || cols == 0 {
		return nil, 0, 0, 0, fmt.Errorf("idx: empty image size %d×%d", rows, cols)
	}
	raw, err := readIDXData(ir, n*rows*cols)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	x = make([]float32, len(raw))
	for i, b := range raw {
		x[i] = pixels[b]
	}
	return x, n, rows, cols, nil
}

// pixel maps a byte to [0,1]; SaveSet relies on this exact expression to
// recognise image data it can store as bytes again.
func pixel(b byte) float32 { return float32(b) / 255 }

// pixels[b] is pixel(b), for the loops that convert whole images.
var pixels = func() (t [256]float32) {
	for b := range t {
		t[b] = pixel(byte(b))
	}
	return t
}()

// ReadIDXLabels reads an IDX1 unsigned-byte label file (gzip or plain).
func ReadIDXLabels(r io.Reader) ([]int, error) {
	ir, err := openIDX(r)
	if err != nil {
		return nil, err
	}
	dims, err := readIDXHeader(ir, 1)
	if err != nil {
		return nil, err
	}
	raw, err := readIDXData(ir, dims[0])
	if err != nil {
		return nil, err
	}
	y := make([]int, len(raw))
	for i, b := range raw {
		y[i] = int(b)
	}
	return y, nil
}

// Raw is a dataset as shipped: its official train and test sets.
type Raw struct {
	Train, Test Set
	K           int
	ClassNames  []string
}

// LoadFashionMNIST reads the four Fashion-MNIST IDX files from dir
// (DefaultFashionMNISTDir when dir is empty). Each file may be gzipped
// (name.gz, as Debian ships them) or plain (name). Errors name the file.
func LoadFashionMNIST(dir string) (*Raw, error) {
	if dir == "" {
		dir = DefaultFashionMNISTDir
	}
	K := len(FashionMNISTClasses)
	train, err := loadIDXPair(dir, "train", K)
	if err != nil {
		return nil, err
	}
	test, err := loadIDXPair(dir, "t10k", K)
	if err != nil {
		return nil, err
	}
	if train.Dim != test.Dim {
		return nil, fmt.Errorf("fashion-mnist in %s: train images have %d pixels, test images %d", dir, train.Dim, test.Dim)
	}
	return &Raw{Train: train, Test: test, K: K, ClassNames: append([]string(nil), FashionMNISTClasses...)}, nil
}

// loadIDXPair loads prefix-images-idx3-ubyte and prefix-labels-idx1-ubyte.
func loadIDXPair(dir, prefix string, K int) (Set, error) {
	var s Set
	imgPath, f, err := openEither(dir, prefix+"-images-idx3-ubyte")
	if err != nil {
		return s, err
	}
	x, n, rows, cols, err := ReadIDXImages(f)
	f.Close()
	if err != nil {
		return s, fmt.Errorf("%s: %w", imgPath, err)
	}
	if n == 0 {
		return s, fmt.Errorf("%s: no images", imgPath)
	}
	lblPath, f, err := openEither(dir, prefix+"-labels-idx1-ubyte")
	if err != nil {
		return s, err
	}
	y, err := ReadIDXLabels(f)
	f.Close()
	if err != nil {
		return s, fmt.Errorf("%s: %w", lblPath, err)
	}
	if len(y) != n {
		return s, fmt.Errorf("%s: %d labels but %s has %d images", lblPath, len(y), imgPath, n)
	}
	for i, v := range y {
		if v >= K {
			return s, fmt.Errorf("%s: label %d at index %d outside [0,%d)", lblPath, v, i, K)
		}
	}
	return Set{X: x, Y: y, N: n, Dim: rows * cols}, nil
}

// openEither opens dir/name.gz, falling back to dir/name.
func openEither(dir, name string) (string, *os.File, error) {
	gz := filepath.Join(dir, name+".gz")
	f, _, err := boundedfile.Open(gz, boundedfile.Unbounded)
	if err == nil {
		return gz, f, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return gz, nil, err
	}
	plain := filepath.Join(dir, name)
	f, _, err2 := boundedfile.Open(plain, boundedfile.Unbounded)
	if err2 == nil {
		return plain, f, nil
	}
	if errors.Is(err2, os.ErrNotExist) {
		return gz, nil, fmt.Errorf("%s: not found (nor %s); install the dataset-fashion-mnist package or pass the directory holding the IDX files", gz, name)
	}
	return plain, nil, err2
}
