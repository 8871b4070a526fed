#!/usr/bin/env bash
# One staged GPU command for a lent card (at most 10 minutes a command): every stage writes its JSON to
# OUT as soon as it finishes, so a run cut short keeps what it measured. Stages, each under its own time
# cap (and never past the overall --budget):
#   0. hf-cache   any real Whisper weights on the host (the Hugging Face cache: HF_HOME, HF_HUB_CACHE,
#                 ~/.cache/huggingface), listed by path and size; nothing is read or loaded
#   1. build      the prebuilt CUDA build from the bundle if it fits, else the lean CUDA build
#                 (patches/0009) with every core, and the synthetic model (run.sh --build-only)
#   2. smoke      gpu/smoke.ts: behaviour on the card, the wide self-check (--wide-batch = the largest B
#                 of the sweep: the canary fills it) and the CUDA-graph counters
#   3. variants   gpu/encoder-variants.ts: the batched encoder's variants (a)–(e) at B = --variant-batch,
#                 token agreement, encoder ms per window and per-op profiles (backend of each node,
#                 scheduler splits, host<->device bytes); then (f): the same with CUDA graphs off
#                 (GGML_CUDA_DISABLE_GRAPHS=1, read once per process)
#   4. peer       gpu/peer-transformers.py at the sweep's batch sizes, --tokens new tokens a window
#   5. sweep      gpu/bench.ts --batch-only: ours at the same batch sizes, with the peer's rows beside
# Stage files: OUT/stage-<n>-<name>.json ({stage, ok, exit, wallSec, capSec, files}) next to the
# stages' own result files; OUT/staged.log is the whole console.
#
#   bash benchmarks/gpu/staged.sh --out "$OUT" [--budget 570] [--model synthetic-large-v3]
#        [--batch-sizes 1,8,24,64,128] [--tokens 100] [--variant-batch 16] [--bundle .carry/gpu] [--work DIR]
#        [--cap-scale 1] [--cpu]
#   --cpu  the dry run on a development machine: CPU build, synthetic-tiny, B = 1,2, variants at B = 2,
#          the peer on the CPU; the same stages and files. --cap-scale multiplies every stage's cap (a dry
#          run on a shared 2-core machine needs more than a 16-core GPU host)
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out=""
budget=570
model="synthetic-large-v3"
batch_sizes="1,8,24,64,128"
tokens=100
variant_batch=16
cpu=0
list_hf=0
cap_scale=1
work="${TMPDIR:-/tmp}/gpu-bench"
bundle="$repo/.carry/gpu"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --batch-sizes) batch_sizes="$2"; shift 2 ;;
    --tokens) tokens="$2"; shift 2 ;;
    --variant-batch) variant_batch="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --bundle) bundle="$2"; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --cap-scale) cap_scale="$2"; shift 2 ;;
    --list-hf-cache) list_hf=1; shift ;;
    *) echo "staged.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" ]] || { echo "staged.sh: --out DIR is required" >&2; exit 2; }
if [[ $list_hf -eq 1 ]]; then
  # Stage 0's body: real Whisper weights in the Hugging Face cache, by path and size (nothing is read).
  roots=()
  for r in "${HF_HUB_CACHE:-}" "${HF_HOME:+$HF_HOME/hub}" "$HOME/.cache/huggingface/hub" /root/.cache/huggingface/hub; do
    [[ -n "$r" && -d "$r" ]] && roots+=("$(cd "$r" && pwd -P)")
  done
  mapfile -t roots < <(printf '%s\n' "${roots[@]}" | awk 'NF && !seen[$0]++')
  files=""
  [[ ${#roots[@]} -gt 0 ]] && files="$(find -L "${roots[@]}" -ipath '*whisper*' -type f \( -name '*.safetensors' -o -name '*.bin' \
    -o -name '*.pt' -o -name 'config.json' \) -printf '    {"path": "%p", "bytes": %s}\n' 2>/dev/null | paste -sd, -)"
  printf '{\n  "roots": [%s],\n  "whisperFiles": [\n%s\n  ]\n}\n' \
    "$( ((${#roots[@]})) && printf '"%s",' "${roots[@]}" | sed 's/,$//')" "$files" >"$out/hf-cache.json"
  cat "$out/hf-cache.json"
  exit 0
fi
mkdir -p "$out" "$work"
out="$(cd "$out" && pwd)"
if [[ $cpu -eq 1 ]]; then
  [[ "$model" == synthetic-large-v3 ]] && model=synthetic-tiny
  [[ "$batch_sizes" == 1,8,24,64,128 ]] && batch_sizes=1,2
  [[ "$variant_batch" == 16 ]] && variant_batch=2
  [[ "$tokens" == 100 ]] && tokens=8
fi
wide="${batch_sizes##*,}"
exec > >(tee -a "$out/staged.log") 2>&1
start=$SECONDS
log() { echo "[staged $(date +%T) +$((SECONDS - start))s] $*"; }

# stage N NAME CAP CMD...: runs CMD under min(CAP, what the budget has left), then writes its JSON.
stage() {
  local n="$1" name="$2" cap=$(($3 * cap_scale))
  shift 3
  local left=$((budget - (SECONDS - start)))
  local limit=$((cap < left ? cap : left))
  local file="$out/stage-$n-$name.json"
  if [[ $limit -lt 10 ]]; then
    log "stage $n $name: skipped, ${left}s of the budget left"
    printf '{"stage": "%s", "ok": false, "skipped": "budget spent", "capSec": %d}\n' "$name" "$cap" >"$file"
    return 0
  fi
  log "stage $n $name (cap ${limit}s): $*"
  local t0=$SECONDS before
  before="$(ls "$out")"
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  local files
  files="$(comm -13 <(echo "$before" | sort) <(ls "$out" | sort) | grep -v "^stage-$n-" | sed 's/.*/"&"/' | paste -sd, -)"
  printf '{"stage": "%s", "ok": %s, "exit": %d, "timedOut": %s, "wallSec": %d, "capSec": %d, "files": [%s]}\n' \
    "$name" "$([[ $rc -eq 0 ]] && echo true || echo false)" "$rc" "$([[ $rc -eq 124 || $rc -eq 137 ]] && echo true || echo false)" \
    "$((SECONDS - t0))" "$limit" "$files" >"$file"
  log "stage $n $name: exit $rc in $((SECONDS - t0))s → $(basename "$file")"
}

node_bin() { [[ -x "$work/node" ]] && echo "$work/node" || command -v node; }
model_path="$work/models/ggml-$model.bin"
cpu_flag=()
[[ $cpu -eq 1 ]] && cpu_flag=(--cpu)

stage 0 hf-cache 20 bash "$0" --list-hf-cache --out "$out"
stage 1 build 240 bash "$repo/benchmarks/gpu/run.sh" --build-only --bundle "$bundle" --work "$work" --model "$model" "${cpu_flag[@]}"
node="$(node_bin)"
stage 2 smoke 120 "$node" "$repo/benchmarks/gpu/smoke.ts" --model "$model_path" --model-name "$model" \
  --wav "$bundle/fixtures/jfk.wav" --dtw "$(m="${model#synthetic-}"; echo "${m//-/.}")" --tokens 32 \
  --wide-batch "$wide" --out "$out" "${cpu_flag[@]}"
stage 3 variants 100 "$node" "$repo/benchmarks/gpu/encoder-variants.ts" --model "$model_path" --model-name "$model" \
  --windows "$variant_batch" --tokens 32 --out "$out" "${cpu_flag[@]}"
stage 3 variants-no-cuda-graphs 60 env GGML_CUDA_DISABLE_GRAPHS=1 "$node" "$repo/benchmarks/gpu/encoder-variants.ts" \
  --model "$model_path" --model-name "$model" --windows "$variant_batch" --tokens 32 --out "$out" "${cpu_flag[@]}"
peer_args=(--batch-sizes "$batch_sizes" --tokens "$tokens" --runs 1 --out "$out/peer-transformers.json")
[[ $cpu -eq 1 ]] && peer_args+=(--device cpu)
stage 4 peer 90 "$(command -v python3 || echo python3)" "$repo/benchmarks/gpu/peer-transformers.py" "${peer_args[@]}"
bench_bin="$(find "$work/prebuilt-cuda" "$work/build-$([[ $cpu -eq 1 ]] && echo cpu || echo cuda)" -type f -name whisper-bench -perm -u+x 2>/dev/null | head -1)"
cli_bin="$repo/build/$([[ $cpu -eq 1 ]] && echo addon || echo addon-cuda)/bin/whisper-cli"
stage 5 sweep 150 "$node" "$repo/benchmarks/gpu/bench.ts" --bench "$bench_bin" --cli "$cli_bin" --model "$model_path" \
  --model-name "$model" --wav "$bundle/fixtures/jfk.wav" --runs 1 --batch-only --no-dtw --no-profile \
  --batch-sizes "$batch_sizes" --tokens "$tokens" --batch-runs 1 --peer "$out/peer-transformers.json" --out "$out" "${cpu_flag[@]}"
log "done in $((SECONDS - start))s (budget ${budget}s): $(ls "$out" | paste -sd' ')"
