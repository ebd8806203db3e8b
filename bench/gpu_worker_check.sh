#!/usr/bin/env bash
# The worker's GPU checks of issues #44 and #47, in one go, on a box with
# CUDA and its own torch 2.x: the worker pip-installed into a fresh venv
# over that torch, then selmix runs through it on CNN features with each
# gain form (samples uses the protocol's features request) and the
# built-in coverage settings, and a samples run interrupted after 20 s and resumed.
#
#   bash bench/gpu_worker_check.sh SELMIX FEATURES_DIR OUT
#
# SELMIX is a selmix binary that runs there (CGO_ENABLED=0 go build
# -trimpath -ldflags='-s -w' ./cmd/selmix), FEATURES_DIR holds
# train/val/test/head.npz (bench/make_cnn_features.py --out DIR), OUT
# receives the log. Python is $PYTHON (default python3, with torch);
# $SELMIX_EXTRA is added to each run's command line (e.g. "--set
# finetune.steps=500").
set -u
bin=$(realpath "$1") data=$(realpath "$2") out=$3
py=${PYTHON:-python3}
mkdir -p "$out"
cd "$(dirname "$0")/.."
{
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
$py -c 'import torch,sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
venv=$(mktemp -d)/venv
$py -m venv --system-site-packages "$venv" && "$venv/bin/pip" install --no-deps --no-build-isolation -e workers/torch 2>&1 | tail -1
if ! (cd /tmp && "$venv/bin/python" -c 'import selmix_torch; print("selmix_torch from", selmix_torch.__file__)'); then
  echo "pip install -e failed (above): the worker from the tree, on PYTHONPATH"
  export PYTHONPATH=$PWD/workers/torch${PYTHONPATH:+:$PYTHONPATH}
fi
w="$venv/bin/python -m selmix_torch --recipe features --train $data/train.npz --val $data/val.npz --test $data/test.npz --head $data/head.npz --device cuda"
runs=$(mktemp -d)
for form in paper official samples; do
  echo "== form $form"
  timeout 300 "$bin" run --headless -q --runs "$runs" --set finetune.objective=mean-recall@cov --set finetune.form=$form \
    --set finetune.gain_norm=max --set record.plots=false ${SELMIX_EXTRA:-} --set name=gpu-$form --worker -- $w 2>&1 | tail -8
  echo "rc=${PIPESTATUS[0]}"
done
echo "== samples, interrupted after 20 s and resumed"
timeout 300 "$bin" run --headless -q --runs "$runs" --set finetune.objective=mean-recall@cov --set finetune.form=samples \
  --set finetune.gain_norm=max --set record.plots=false ${SELMIX_EXTRA:-} --set name=gpu-resume --worker -- $w > /dev/null 2>&1 &
sleep 20; kill -INT $! ; wait $!
timeout 300 "$bin" resume --runs "$runs" gpu-resume 2>&1 | tail -4
for n in gpu-paper gpu-official gpu-samples gpu-resume; do "$bin" runs show --runs "$runs" $n 2>&1 | grep -E "^(name|method|worker|status)|min_coverage"; done
} 2>&1 | tee "$out/gpu_worker_check.txt"
