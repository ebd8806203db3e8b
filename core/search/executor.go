package search

// Executors.
const (
	ExecLocal = "local"
	ExecSlurm = "slurm"
)

// Executor is the executor spec runs with unless told: Slurm when it has
// a [slurm] table, else local.
func (s *Spec) Executor() string {
	if s.Slurm != nil {
		return ExecSlurm
	}
	return ExecLocal
}
