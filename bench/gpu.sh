#!/usr/bin/env bash
# The GPU figures of docs/performance.md's worker table, in one go: `selmix bench worker`
# for ResNet-50 at 224 px with AMP on an ImageFolder tree of JPEGs, and for
# WRN-28-2 on CIFAR-format data held on the GPU, each against the plain
# PyTorch loop on the same GPU, then a short selmix run of each through
# SIGINT and resume.
#
#   bash bench/gpu.sh SELMIX FMNIST_DIR OUT
#
# SELMIX is a selmix binary that runs there (CGO_ENABLED=0 go build
# ./cmd/selmix: the pure-Go BLAS is enough, the worker does the training),
# FMNIST_DIR holds Fashion-MNIST's four IDX .gz files (Debian's
# /usr/share/datasets/fashion-mnist), OUT receives the tables and logs.
# Python is $PYTHON (default python3: torch with CUDA, torchvision).
# Everything runs under its own timeout, so one failure leaves the rest.
# The variables below shrink it for a try on the CPU:
#   GPU_FLAGS="--device cpu" R50_NET=resnet18 IMAGE_SIZE=64 R50_STEPS=4 \
#   WRN_STEPS=4 LOADERS=2 RESUME_STEPS=40 bash bench/gpu.sh …
set -u
bin=$(realpath "$1") data=$2 out=$3
py=${PYTHON:-python3}
export SELMIX_WORKER_TRACE=1  # each request and its time in the runs' worker.log
scratch=${SCRATCH:-/tmp/selmix-gpu}
loaders=${LOADERS:-12}
mkdir -p "$out" "$scratch"
cd "$(dirname "$0")/.."

say() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

say machine
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/machine.txt"
nproc | tee -a "$out/machine.txt"
$py -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0), "bf16", torch.cuda.is_bf16_supported())' 2>&1 | tee -a "$out/machine.txt"

say data
timeout 120 $py bench/make_imagefolder.py --data "$data" --out "$scratch/if" --size 256 --n1 1000 --rho 10 \
    --val-per-class 50 --test-per-class 100 --jobs 16 || echo "make_imagefolder failed"
timeout 120 $py bench/make_cifar.py --data "$data" --out "$scratch/cifar" --per-class 4000 || echo "make_cifar failed"

# bench NAME TIMEOUT STEPS BATCH REFRESH -- worker options
bench() {
    local name=$1 limit=$2 steps=$3 batch=$4 refresh=$5
    shift 6
    say "bench $name"
    timeout "$limit" "$bin" bench worker --steps "$steps" --batch "$batch" --refresh "$refresh" --loader-workers "$loaders" \
        --dir "$scratch/$name" --out "$out/$name.md" -- "$py" workers/torch/selmix_worker.py "$@" 2>&1 | tail -n 40
    echo "exit ${PIPESTATUS[0]}"
}

read -r -a flags <<<"${GPU_FLAGS---amp --channels-last}"
r50=(--recipe imagefolder --root "$scratch/if" --net "${R50_NET:-resnet50}" --image-size "${IMAGE_SIZE:-224}" --pretrain-epochs 0
     --eval-batch 256 --verify 8 "${flags[@]}")
wrn=(--recipe cifar --root "$scratch/cifar/cifar-10-batches-py" --net wrn28-2 --n1 1500 --m1 2000 --rho 100 --val-per-class 500
     --pretrain-epochs 0 --eval-batch 1024 "${flags[@]}")

bench resnet50 "${R50_LIMIT:-240}" "${R50_STEPS:-300}" 128 "${R50_REFRESH:-100}" -- "${r50[@]}"
bench wrn28-2 "${WRN_LIMIT:-150}" "${WRN_STEPS:-1500}" 128 "${WRN_REFRESH:-300}" -- "${wrn[@]}"

# A run stopped by SIGINT midway (after its third refresh) resumes and ends. SKIP_RESUME=1 leaves it out.
if [ -z "${SKIP_RESUME:-}" ]; then
    say "stop and resume on the GPU (WRN-28-2)"
    runs="$scratch/resume"
    timeout 150 "$bin" run --headless -q --runs "$runs" --set name=gpu-resume --set finetune.steps=${RESUME_STEPS:-400} --set finetune.batch=128 \
        --set finetune.refresh=${RESUME_REFRESH:-50} --set record.plots=false --worker -- "$py" workers/torch/selmix_worker.py "${wrn[@]}" &
    pid=$!
    for _ in $(seq 600); do
        [ "$(cat "$runs"/*/events.jsonl 2>/dev/null | grep -c '"kind":"refresh"')" -ge 3 ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.2
    done
    kill -INT $pid
    wait $pid
    echo "first leg exit $?"
    timeout 150 "$bin" resume -q --runs "$runs" gpu-resume
    echo "resume exit $?"
    timeout 30 "$bin" runs show --runs "$runs" gpu-resume 2>&1 | tail -n 25
fi

say logs
tar czf "$out/logs.tgz" -C "$scratch" --exclude='*.jpg' --exclude='cifar' --exclude='*.npz' --exclude='*.ckpt' \
    $(cd "$scratch" && ls -d resnet50 wrn28-2 resume 2>/dev/null) 2>/dev/null
say tables
cat "$out"/*.md 2>/dev/null
