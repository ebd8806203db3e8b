#!/usr/bin/env bash
# The searches of issue #48 on a real GPU box, in one go, with every
# member's PyTorch worker on CUDA and placed by `--gpus auto` (nvidia-smi)
# (the worker from the tree, on PYTHONPATH):
#   1. population-based training, explore = forecast (each forecast
#      restores the copied run's worker from its checkpoint), 4 members;
#   2. successive halving over 4 members;
#   3. a final member of each replayed from its lineage;
#   4. the worker checks of issues #44 and #47 at 500 steps
#      (bench/gpu_worker_check.sh).
#
#   bash bench/gpu_search_check.sh SELMIX FEATURES_DIR OUT
#
# SELMIX is a selmix binary that runs there (CGO_ENABLED=0 go build
# -trimpath -ldflags='-s -w' ./cmd/selmix), FEATURES_DIR holds
# train/val/test/head.npz (bench/make_cnn_features.py --out DIR), OUT
# receives the logs and the reports. Python is $PYTHON (default python3,
# with torch); $DEVICE is the workers' device (default cuda; cpu to try
# the script on a box without one).
set -u
bin=$(realpath "$1") data=$(realpath "$2") out=$(realpath -m "$3")
py=${PYTHON:-python3}
mkdir -p "$out"
cd "$(dirname "$0")/.."
log="$out/gpu_search_check.txt"
exec > >(tee "$log") 2>&1
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
$py -c 'import torch,sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
# The worker from the tree (part 4 checks its pip install into a venv).
export PYTHONPATH=$PWD/workers/torch${PYTHONPATH:+:$PYTHONPATH}
work=$(mktemp -d) runs=$(mktemp -d)/runs
w="\"$(command -v "$py")\", \"-m\", \"selmix_torch\", \"--recipe\", \"features\", \"--train\", \"$data/train.npz\", \"--val\", \"$data/val.npz\", \"--test\", \"$data/test.npz\", \"--head\", \"$data/head.npz\", \"--device\", \"${DEVICE:-cuda}\""
base="[base]
\"finetune.steps\" = 300
\"finetune.refresh\" = 25
\"finetune.objective\" = \"min-recall\"
\"record.plots\" = false
\"record.checkpoint_every\" = 4
\"worker.command\" = [$w]
seed = 1
[axes]
\"finetune.s\" = [0.5, 1.0, 2.0, 4.0]
"
printf 'name = "gpupbt"\n%s[pbt]\ninterval = 100\nexplore = "forecast"\ncandidates = 6\n' "$base" > "$work/pbt.toml"
printf 'name = "gpuasha"\n%s[asha]\nmin_steps = 50\neta = 2\n' "$base" > "$work/asha.toml"

stamp "1. PBT, explore = forecast, workers on CUDA, --gpus auto"
(cd "$work" && timeout 240 "$bin" sweep pbt.toml --search pbt --runs "$runs" --gpus auto --threads 2)
echo "rc=$?"
"$bin" sweep status gpupbt --runs "$runs"
"$bin" sweep report gpupbt --runs "$runs" --out "$out/pbt-report.md" --format png | tail -2

stamp "2. ASHA, workers on CUDA, --gpus auto"
(cd "$work" && timeout 180 "$bin" sweep asha.toml --search asha --runs "$runs" --gpus auto --threads 2)
echo "rc=$?"
"$bin" sweep status gpuasha --runs "$runs"
"$bin" sweep report gpuasha --runs "$runs" --out "$out/asha-report.md" --format png | tail -2

stamp "3. replay of a final member of each (same GPU, same worker)"
# A copy of the population (a fork from another member's checkpoint, then
# its explore), and the member successive halving ran to the end.
for s in gpupbt gpuasha; do
  id=$("$bin" sweep status "$s" --runs "$runs" | awk -v want="$([ $s = gpupbt ] && echo '←' || echo finished)" \
    '$0 ~ /finished/ && index($0, want) {for (i=1;i<=NF;i++) if ($i ~ /^20[0-9][0-9][0-9][0-9][0-9][0-9]-/) {print $i; exit}}')
  echo "$s: replaying $id"
  [ -n "$id" ] && (cd "$work" && timeout 90 "$bin" replay --runs "$runs" "$id" 2>&1 | tail -3)
done
grep -h '"gpus"' "$runs"/*/run.json | sort | uniq -c

stamp "4. the worker checks of #44 and #47 at 500 steps"
SELMIX_EXTRA="--set finetune.steps=500" timeout 200 bash bench/gpu_worker_check.sh "$bin" "$data" "$out/worker" > /dev/null 2>&1
echo "rc=$?"
cat "$out/worker/gpu_worker_check.txt" 2>/dev/null | tail -40
stamp "done"
