package worker

// The reasons a worker gives beside "error" in a reply that is not ok
// (docs/worker-protocol.md, "Frames" and "Failures"). The Python worker
// names the same values in selmix_torch/protocol.py; the corpus of
// docs/worker-protocol/replies/ holds both.
const (
	// ReasonOutOfMemory: the request ran out of memory (CUDA or host).
	// The run stops rather than fails (ErrOutOfMemory): it resumes, or
	// forks with a smaller batch, from its last checkpoint.
	ReasonOutOfMemory = "out_of_memory"
	// ReasonBadInput: in reply to hello, the worker refused its own input
	// (a missing data folder, a corrupt file, weights of another
	// architecture). The configuration is at fault (ErrBadInput): selmix
	// exits 2 before a run exists.
	ReasonBadInput = "bad_input"
)
