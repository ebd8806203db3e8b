package slurmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The cluster runs an array job to completion, and a task requeued by
// scontrol starts again within seconds (cred_expire), not minutes.
func TestCluster(t *testing.T) {
	c := Start(t)
	out := filepath.Join(c.Dir, "out")
	script := filepath.Join(c.Dir, "job.sh")
	body := "#!/bin/bash\necho \"task $SLURM_ARRAY_TASK_ID restart ${SLURM_RESTART_COUNT:-0}\"\n" +
		"if [ \"$SLURM_ARRAY_TASK_ID\" = 1 ] && [ -z \"$SLURM_RESTART_COUNT\" ]; then scontrol requeue \"${SLURM_ARRAY_JOB_ID}_1\"; sleep 30; fi\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	job := strings.TrimSpace(c.Output(t, "sbatch", "--parsable", "--array=0-1", "--requeue", "--open-mode=append", "--output="+out+"-%a", script))
	start := time.Now()
	for {
		st := c.Output(t, "squeue", "--noheader", "--array", "--states=all", "--jobs="+job, "--format=%K %T")
		if strings.Count(st, "COMPLETED") == 2 {
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("job %s not completed after 90 s:\n%s", job, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("array with one requeue completed in %.1fs", time.Since(start).Seconds())
	b, _ := os.ReadFile(out + "-1")
	if !strings.Contains(string(b), "task 1 restart 0") || !strings.Contains(string(b), "task 1 restart 1") {
		t.Errorf("task 1 did not run twice:\n%s", b)
	}
}
