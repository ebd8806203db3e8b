package loop

// are unknown. It is live information: it never enters a run's results.
type System struct {
	Device      string  `json:"device"`
	MemUsed     int64   `json:"mem_used,omitempty"`     // device memory in use, bytes
	MemReserved int64   `json:"mem_reserved,omitempty"` // device memory reserved by the framework, bytes
	MemPeak     int64   `json:"mem_peak,omitempty"`     // most device memory in use at once since the trainer started, bytes
	ImgS        float64 `json:"img_s,omitempty"`        // training images through the model per second of training since the last report
	Util        float64 `json:"util,omitempty"`         // device utilisation, 0–1, when the driver exposes it
	RSS         int64   `json:"rss,omitempty"`          // resident memory of the trainer's process, bytes
	CPU         float64 `json:"cpu,omitempty"`          // CPU time over wall time since the last report (1 = one core)
	WorldSize   int     `json:"world_size,omitempty"`   // ranks serving the run (0: unknown, one); the figures above are their sums
	GPUs        []GPU   `json:"gpus,omitempty"`         // per GPU the run uses, in rank order
}

// GPU is what a Trainer reports of one GPU its ranks use. Zero fields are
// unknown.
type GPU struct {
	ID          string  `json:"id"`                     // as CUDA_VISIBLE_DEVICES names it: "3", "GPU-…", "MIG-…"
	Name        string  `json:"name,omitempty"`         // "NVIDIA H100 80GB HBM3"
	Ranks       int     `json:"ranks,omitempty"`        // ranks on it
	MemUsed     int64   `json:"mem_used,omitempty"`     // what the run's ranks on it use, bytes
	MemReserved int64   `json:"mem_reserved,omitempty"` // and reserve
	MemPeak     int64   `json:"mem_peak,omitempty"`     // and used at most at once
	MemTotal    int64   `json:"mem_total,omitempty"`    // the GPU's memory, bytes
	Util        float64 `json:"util,omitempty"`         // the GPU's utilisation, 0–1
}

// Clone is a deep copy of s (nil for nil).
func (s *System) Clone() *System {
	if s == nil {
		return nil
	}
	c := *s
	c.GPUs = append([]GPU(nil), s.GPUs...)
	return &c
}
