package sweep_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

func TestArraySpec(t *testing.T) {
	cases := []struct {
		members  []int
		throttle int
		want     string
	}{
		{[]int{0, 1, 2, 3, 4, 5}, 2, "0-5%2"},
		{[]int{0, 1, 2, 3, 4, 5}, 0, "0-5"},
		{[]int{4}, 0, "4"},
		{[]int{1, 4, 7, 8, 9}, 3, "1,4,7-9%3"},
		{[]int{0, 2, 3, 5}, 0, "0,2-3,5"},
	}
	for _, c := range cases {
		if got := search.ArraySpec(c.members, c.throttle); got != c.want {
			t.Errorf("ArraySpec(%v, %d) = %q, want %q", c.members, c.throttle, got, c.want)
		}
	}
}

// fakeCluster records submissions.
type fakeCluster struct {
	script, array string
	tasks         map[int]string
}

func (f *fakeCluster) Submit(_ context.Context, script, array string, _ ...string) (string, error) {
	f.script, f.array = script, array
	return "4242", nil
}

func (f *fakeCluster) Tasks(context.Context, *sweep.Sweep) (map[int]string, error) {
	return f.tasks, nil
}

func TestSubmit(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec+"[slurm]\nmax_parallel = 2\n", search.ExecSlurm)
	cl := &fakeCluster{}
	j, err := s.Submit(context.Background(), cl, "/opt/selmix", []int{5, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != "4242" || cl.array != "1-2,5%2" || cl.script != s.ScriptPath() {
		t.Errorf("submitted %+v: script %s array %s", j, cl.script, cl.array)
	}
	back, err := sweep.Load(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Jobs) != 1 || back.Jobs[0].ID != "4242" || back.Jobs[0].Array != "1-2,5%2" {
		t.Errorf("recorded jobs %+v", back.Jobs)
	}
	// The reader now asks the cluster, and its word decides.
	cl.tasks = map[int]string{0: "PENDING", 1: "CANCELLED"}
	st, err := sweep.NewReader(back, cl).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.Slurm || st.Members[0].Category != sweep.Pending || !st.Members[0].Active || st.Members[1].Category != sweep.Failed {
		t.Errorf("status from Slurm: %+v", st.Members[:2])
	}
}

func TestBatchScriptText(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec+`[slurm]
partition = "gpu"
time = "01:00:00"
gres = "gpu:1"
cpus_per_task = 4
mem = "8G"
max_parallel = 3
signal_seconds = 120
requeue = true
extra = ["--account=lab"]
`, search.ExecSlurm)
	script, err := s.BatchScript("/opt/bin/selmix")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"#SBATCH --job-name=" + s.ID,
		"#SBATCH --array=0-5%3",
		"#SBATCH --output=" + s.Dir + "/slurm/%A_%a.out",
		"#SBATCH --chdir=" + s.Workdir,
		"#SBATCH --partition=gpu", "#SBATCH --time=01:00:00", "#SBATCH --gres=gpu:1",
		"#SBATCH --cpus-per-task=4", "#SBATCH --mem=8G", "#SBATCH --signal=B:TERM@120",
		"#SBATCH --requeue", "#SBATCH --account=lab",
		"'/opt/bin/selmix' sweep member '" + s.Dir + "' \"$SLURM_ARRAY_TASK_ID\" \"$@\" &",
		`  scontrol requeue "$task" && exit 0`,
	} {
		if !strings.Contains(script, line+"\n") {
			t.Errorf("script lacks %q:\n%s", line, script)
		}
	}
	if strings.Contains(script, "SLURM_ARRAY_JOB_ID}\"") || strings.Contains(script, "requeue \"$SLURM_ARRAY_JOB_ID\"") {
		t.Error("the script could requeue the whole array")
	}
	s.Dir = "/has space/x"
	if _, err := s.BatchScript("/opt/bin/selmix"); err == nil {
		t.Error("a folder with a space went into #SBATCH lines")
	}
}

// The batch script, run by bash with stand-ins for selmix, squeue and
// scontrol: it passes selmix's exit code on, forwards SIGTERM to selmix,
// and requeues its own array task, and only that, when selmix stopped
// (143) while the task still runs — not after scancel (COMPLETING).
func TestBatchScriptBehaviour(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cases := []struct {
		name     string
		requeue  bool
		exit     string // the stand-in selmix's exit code; "term" waits for SIGTERM and exits 143
		state    string // what squeue says of the task
		wantCode int
		wantCall string // scontrol's arguments, "" for no call
	}{
		{"finished", true, "0", "RUNNING", 0, ""},
		{"failed", true, "1", "RUNNING", 1, ""},
		{"preemption warning, requeue", true, "term", "RUNNING", 0, "requeue 100_3"},
		{"scancel", true, "term", "COMPLETING", 143, ""},
		{"warning without requeue", false, "term", "RUNNING", 143, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			write := func(name, body string) string {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte("#!/bin/bash\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
				return p
			}
			selmix := write("selmix", `echo "selmix $*" >> "$LOG"
if [ "$EXIT" != term ]; then exit "$EXIT"; fi
trap 'echo "selmix got TERM" >> "$LOG"; exit 143' TERM
echo started >> "$LOG"
while :; do sleep 0.02; done
`)
			// Asked by the array's job id, squeue lists every task of the
			// array: the script must ask for its own task.
			write("squeue", `echo "squeue $*" >> "$LOG"
case "$*" in *--jobs=100_3*) echo "$STATE" ;; *--jobs=100*|*--jobs=104*) echo CANCELLED; echo "$STATE" ;; esac`)
			write("scontrol", `echo "scontrol $*" >> "$LOG"`)
			s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecSlurm)
			s.Slurm = &search.Slurm{Requeue: c.requeue, SignalSeconds: 60}
			script, err := s.BatchScript(selmix)
			if err != nil {
				t.Fatal(err)
			}
			sp := write("job.sh", strings.TrimPrefix(script, "#!/bin/bash\n"))
			cmd := exec.Command("bash", sp)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "LOG="+log, "EXIT="+c.exit, "STATE="+c.state,
				"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_JOB_ID=100", "SLURM_JOB_ID=104")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if c.exit == "term" {
				deadline := time.Now().Add(10 * time.Second)
				for {
					b, _ := os.ReadFile(log)
					if strings.Contains(string(b), "started") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("selmix stand-in did not start:\n%s", b)
					}
					time.Sleep(10 * time.Millisecond)
				}
				cmd.Process.Signal(syscall.SIGTERM) // to the batch shell only, as --signal=B:TERM does
			}
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			b, _ := os.ReadFile(log)
			got := string(b)
			if code != c.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, c.wantCode, got)
			}
			if !strings.Contains(got, "selmix sweep member "+s.Dir+" 3\n") {
				t.Errorf("selmix not run as the member entry point:\n%s", got)
			}
			if c.exit == "term" && !strings.Contains(got, "selmix got TERM") {
				t.Errorf("SIGTERM not forwarded to selmix:\n%s", got)
			}
			var call string
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "scontrol ") {
					call = strings.TrimPrefix(l, "scontrol ")
				}
			}
			if call != c.wantCall {
				t.Errorf("scontrol %q, want %q\n%s", call, c.wantCall, got)
			}
		})
	}
}
