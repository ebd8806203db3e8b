package record

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"

	"selmix/core/loop"
)

// maxInlineK bounds the classes of a refresh read from the control
// socket: G and P of K = 16384 are 1 GiB each as float32.
const maxInlineK = 1 << 14

// InlineRefresh is the refresh of s (s.Refresh must be set) as the control
// socket sends it: the log's record with the per-class vectors and the
// multipliers inline, and G and P with matrices (and when s has them).
func InlineRefresh(s loop.Snapshot, matrices bool) *RefreshData {
	rs := s.Refresh
	d := refreshData(rs.Step, s.Total, s.State, s.Hyper, s.Loss, rs)
	d.Report = reportData(rs.Report, true)
	d.Lambda, d.Aims = nums(rs.Lambda), nums(rs.Aims)
	if matrices && rs.G != nil && rs.P != nil {
		d.G, d.P = packF32(rs.G), packF32(rs.P)
	}
	return &d
}

// Inline reads back what InlineRefresh wrote. G and P are nil unless they
// were sent; every vector must have K values.
func (d *RefreshData) Inline() (*loop.Refresh, error) {
	ev, err := refreshOf(*d)
	if err != nil {
		return nil, err
	}
	rs := ev.Stats
	rs.Report.Prior, rs.Report.Recall, rs.Report.Coverage = floats(d.Report.Prior), floats(d.Report.Recall), floats(d.Report.Coverage)
	rs.Lambda, rs.Aims = floats(d.Lambda), floats(d.Aims)
	for _, v := range []struct {
		name string
		v    []float64
	}{{"prior", rs.Report.Prior}, {"recall", rs.Report.Recall}, {"coverage", rs.Report.Coverage}} {
		if v.v != nil && len(v.v) != rs.K {
			return nil, fmt.Errorf("refresh: %s has %d values for k = %d", v.name, len(v.v), rs.K)
		}
	}
	if d.G == "" && d.P == "" {
		return &rs, nil
	}
	if rs.K < 1 || rs.K > maxInlineK {
		return nil, fmt.Errorf("refresh: g and p for k = %d classes", rs.K)
	}
	if rs.G, err = unpackF32(d.G, rs.K*rs.K); err != nil {
		return nil, fmt.Errorf("refresh: g: %v", err)
	}
	if rs.P, err = unpackF32(d.P, rs.K*rs.K); err != nil {
		return nil, fmt.Errorf("refresh: p: %v", err)
	}
	return &rs, nil
}

// packF32 is v as base64 of little-endian float32 values.
func packF32(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// unpackF32 reverses packF32 and checks there are n values.
func unpackF32(s string, n int) ([]float64, error) {
	if base64.StdEncoding.DecodedLen(len(s)) > 4*n+3 {
		return nil, fmt.Errorf("%d base64 bytes, want %d float32 values", len(s), n)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("%d bytes, want %d float32 values", len(b), n)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return v, nil
}
