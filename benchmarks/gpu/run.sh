#!/usr/bin/env bash
# GPU benchmark harness: entry point on a GPU host (H100/H200, CUDA 13, no internet, maybe no Node).
#
# Needs, beside this repository checkout: the bundle made by benchmarks/gpu/pack.sh (default .carry/gpu/),
# cmake ≥ 3.18, a C++ compiler, nvcc and cuBLAS (ninja if present). It:
#   1. unpacks Node 24, whisper.cpp 1.9.1's build inputs and the node-api headers into the work dir;
#   2. uses the bundle's prebuilt CUDA build (pack.sh --prebuilt-cuda: the addon, whisper-cli and
#      whisper-bench for sm_90) when its manifest's sources hash equals this checkout's
#      (gpu/sources-hash.sh), the GPU's compute capability is 9.0, ldd resolves every library and the
#      addon loads and sees a GPU; otherwise it says why and builds, in one CMake tree (engine/asr/native,
#      whisper.cpp added as a subdirectory), whisper-bench, whisper-cli and our addon with -DGGML_CUDA=ON
#      -DCMAKE_CUDA_ARCHITECTURES=90 (kept between runs; the addon goes to build/addon-cuda/, where
#      engine/asr finds it; its failure is reported, not fatal);
#   3. generates synthetic-large-v3 (random weights, real shape; ≈3.1 GB) with the project's generator;
#   4. runs benchmarks/gpu/smoke.ts: behaviour on this backend (the batched setup's self-check, batched
#      tokens equal to solo, a window cancelled mid-batch, DTW with flash attention on and off); a failed
#      check is recorded in its JSON and printed, not fatal (--no-smoke skips it, --smoke-only stops after);
#   5. runs the transformers peer (benchmarks/gpu/peer-transformers.py, the host's PyTorch + transformers)
#      at the batch sizes, 100 new tokens per window; its failure (no torch, no CUDA) is recorded, not fatal;
#   6. runs benchmarks/gpu/bench.ts: whisper-bench, whisper-cli, the addon's parallel states, the addon
#      batched at the same batch sizes, the model; one result JSON with both sides, the ratios, the floor
#      and an SVG.
# Runs from the bundle alone: a checkout (or the tar of pack.sh --standalone) and .carry/gpu, no node_modules.
#
#   bash benchmarks/gpu/run.sh [--bundle DIR] [--work DIR] [--model synthetic-large-v3] [--runs 5]
#        [--jobs N] [--batch-sizes 1,8,24,64|none] [--tokens 100] [--no-peer] [--no-smoke] [--smoke-only]
#        [--out DIR] [--cpu] [--quick]
#        [-- extra bench.ts args, e.g. --batch-only]
#   --cpu    dry run without a GPU: CPU build (addon into build/addon/), tools run with -ng, the peer with
#            --device cpu (tiny shape)
#   --quick  fewer runs/levels (for a dry run); batch sizes 1,2 unless given
#   --build-only  stop after the build and the model (a tool with a per-command time limit can then run
#                 the measurements in a second call; the work dir keeps the build and the model)
#   --no-prebuilt build even when the bundle holds a prebuilt CUDA build that fits
#   --cuda-full   build every ggml-cuda kernel (-DWHISPER_ADDON_CUDA_LEAN=OFF) instead of the lean build
#                 (patches/0009: flash attention for head size 64, MMQ for the manifest's weight types)
# Results: benchmarks/results/gpu-<device>-<model>.{json,svg}, copied to --out (e.g. $OUT) when given.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="$repo/.carry/gpu"
work="${TMPDIR:-/tmp}/gpu-bench"
model="synthetic-large-v3"
runs=5
jobs="$(nproc)"
out=""
cpu=0
quick=0
build_only=0
batch_sizes=""
tokens=100
peer=1
smoke=1
smoke_only=0
prebuilt=1
cuda_lean=ON
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bundle) bundle="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --quick) quick=1; shift ;;
    --build-only) build_only=1; shift ;;
    --batch-sizes) batch_sizes="$2"; shift 2 ;;
    --tokens) tokens="$2"; shift 2 ;;
    --no-peer) peer=0; shift ;;
    --no-smoke) smoke=0; shift ;;
    --smoke-only) smoke_only=1; shift ;;
    --no-prebuilt) prebuilt=0; shift ;;
    --cuda-full) cuda_lean=OFF; prebuilt=0; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "[gpu-bench $(date +%T)] $*"; }
die() { echo "[gpu-bench] error: $*" >&2; exit 1; }

# The bundle's prebuilt CUDA build (pack.sh --prebuilt-cuda), unpacked into $work/prebuilt-cuda and put
# where a build would put it, if it fits this checkout and this host; else it says why and returns 1.
use_prebuilt() {
  local dir="$bundle/prebuilt-cuda" to="$work/prebuilt-cuda" want have cc f missing
  [[ -f "$dir/manifest.json" && -f "$dir/prebuilt-cuda.tar.xz" ]] || { log "no prebuilt CUDA build in the bundle: building"; return 1; }
  want="$(sed -n 's/.*"sourcesHash": *"\([0-9a-f]*\)".*/\1/p' "$dir/manifest.json")"
  have="$(bash "$repo/benchmarks/gpu/sources-hash.sh" "$repo/engine/asr/native" "$work/whisper.cpp")"
  [[ "$want" == "$have" ]] || { log "prebuilt CUDA build not used: it was made from other sources ($want, here $have): building"; return 1; }
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')"
  [[ "$cc" == 9.0 ]] || { log "prebuilt CUDA build not used: it is for compute capability 9.0, this GPU reports '${cc:-nothing}': building"; return 1; }
  rm -rf "$to" && mkdir -p "$to"
  xz -dc "$dir/prebuilt-cuda.tar.xz" | tar -xf - -C "$to" || { log "prebuilt CUDA build not used: it does not unpack: building"; return 1; }
  for f in whisper_addon.node whisper-cli whisper-bench; do
    missing="$(ldd "$to/$f" 2>&1 | grep 'not found' || true)"
    [[ -z "$missing" ]] || { log "prebuilt CUDA build not used: $f needs libraries this host lacks: $(echo $missing): building"; return 1; }
  done
  "$node" -e 'const a = require(process.argv[1]); if (!(a.gpuDevices() > 0)) { console.error("it sees no GPU"); process.exit(3); }' \
    "$to/whisper_addon.node" || { log "prebuilt CUDA build not used: the addon does not load here (above): building"; return 1; }
  mkdir -p "$addon_out/bin"
  cp "$to/whisper_addon.node" "$addon_out/whisper_addon.node"
  cp "$to/whisper-cli" "$addon_out/bin/whisper-cli"
  log "prebuilt CUDA build: $(sed -n 's/.*"commit": *"\([0-9a-f]*\)".*/\1/p' "$dir/manifest.json" | cut -c1-12), nvcc $(sed -n 's/.*"nvcc": *"\([^"]*\)".*/\1/p' "$dir/manifest.json"), ready in $((SECONDS - t0)) s"
}
[[ -f "$bundle/whisper-src.tar.xz" ]] || die "no bundle at $bundle: run benchmarks/gpu/pack.sh on a dev machine and carry .carry/gpu"
mkdir -p "$work"
bundle="$(cd "$bundle" && pwd)"
work="$(cd "$work" && pwd)"

# 1. Node, sources, headers --------------------------------------------------------------------------
node="$work/node"
if [[ -f "$bundle/node.xz" ]]; then
  [[ -x "$node" && "$node" -nt "$bundle/node.xz" ]] || { xz -dc "$bundle/node.xz" >"$node.tmp" && chmod +x "$node.tmp" && mv "$node.tmp" "$node"; }
elif command -v node >/dev/null; then
  node="$(command -v node)"
else
  die "no Node: neither $bundle/node.xz nor node on PATH"
fi
"$node" -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<22||(a===22&&b<19)) process.exit(1)' ||
  die "Node $("$node" --version) is too old (≥ 22.19 needed)"
log "node $("$node" --version)"

src_stamp="$work/whisper.cpp/.bundle-sha256"
src_sum="$(sha256sum "$bundle/whisper-src.tar.xz" | cut -d' ' -f1)"
if [[ "$(cat "$src_stamp" 2>/dev/null)" != "$src_sum" ]]; then
  rm -rf "$work/whisper.cpp" "$work/napi"
  mkdir -p "$work/whisper.cpp" "$work/napi"
  tar -xJf "$bundle/whisper-src.tar.xz" -C "$work/whisper.cpp"
  tar -xJf "$bundle/napi.tar.xz" -C "$work/napi"
  echo "$src_sum" >"$src_stamp"
fi

# 2. Build (or the prebuilt CUDA build) ---------------------------------------------------------------
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
t0=$SECONDS
bench_bin=""
if [[ $cpu -eq 1 ]]; then
  variant=cpu
  addon_out="$repo/build/addon"
  flags=(-DGGML_CUDA=OFF -DGGML_NATIVE=ON)
else
  variant=cuda
  addon_out="$repo/build/addon-cuda"
  # The CUDA runtime and cuBLAS where the loader may not look: the prebuilt binaries and the addon need them.
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 ${CUDA_HOME:+"$CUDA_HOME/lib64"}; do
    [[ -d "$d" ]] && ls "$d"/libcublas.so* >/dev/null 2>&1 && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
  done
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader || true
  if [[ $prebuilt -eq 1 ]] && use_prebuilt; then
    bench_bin="$work/prebuilt-cuda/whisper-bench"
  else
    if ! command -v nvcc >/dev/null; then
      for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
        if [[ -x "$d/nvcc" ]]; then PATH="$d:$PATH"; break; fi
      done
    fi
    command -v nvcc >/dev/null || die "nvcc not found (PATH, /usr/local/cuda/bin)"
    cublas="$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu "${CUDA_HOME:-/nonexistent}" -name 'libcublas.so*' 2>/dev/null | head -1 || true)"
    [[ -n "$cublas" ]] || die "cuBLAS (libcublas.so) not found: ggml's CUDA backend links it"
    log "nvcc: $(nvcc --version | tail -1); cuBLAS: $cublas"
    flags=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=ON -DWHISPER_ADDON_CUDA_LEAN=$cuda_lean)
  fi
fi
if [[ -z "$bench_bin" ]]; then
  build="$work/build-$variant"
  log "configure ($variant) → $build"
  cmake -S "$repo/engine/asr/native" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DWHISPER_SOURCE_DIR="$work/whisper.cpp" \
    -DNODE_API_HEADERS_DIR="$work/napi/node-api-headers/include" \
    -DNODE_ADDON_API_DIR="$work/napi/node-addon-api" \
    -DADDON_OUTPUT_DIR="$addon_out" "${flags[@]}" >"$work/configure-$variant.log" 2>&1 ||
    { tail -40 "$work/configure-$variant.log"; die "cmake configure failed (log: $work/configure-$variant.log)"; }
  log "build whisper-bench + whisper-cli ($jobs jobs)"
  cmake --build "$build" --target whisper-bench whisper-cli --parallel "$jobs" >"$work/build-$variant.log" 2>&1 ||
    { tail -40 "$work/build-$variant.log"; die "build failed (log: $work/build-$variant.log)"; }
  addon_ok=1
  log "build the addon"
  cmake --build "$build" --target whisper_addon --parallel "$jobs" >>"$work/build-$variant.log" 2>&1 ||
    { addon_ok=0; tail -20 "$work/build-$variant.log"; log "addon build FAILED: the harness goes on without it"; }
  log "built in $((SECONDS - t0)) s"
  bench_bin="$(find "$build" -type f -name whisper-bench -perm -u+x | head -1)"
  # A CPU-only addon in build/addon-cuda would shadow nothing, but a stale CUDA one must not be used by --cpu.
  [[ $addon_ok -eq 1 ]] || rm -f "$addon_out/whisper_addon.node"
fi
cli_bin="$addon_out/bin/whisper-cli"
[[ -x "$bench_bin" && -x "$cli_bin" ]] || die "whisper-bench or whisper-cli missing after the build"

# 3. Model --------------------------------------------------------------------------------------------
model_path="$work/models/ggml-$model.bin"
log "model $model → $model_path"
"$node" "$repo/benchmarks/gpu/gen-model.ts" "$model" "$model_path"

[[ $build_only -eq 1 ]] && { log "build only: done"; exit 0; }

# 4. Behaviour on this backend -------------------------------------------------------------------------
if [[ $smoke -eq 1 ]]; then
  # The model's DTW preset: synthetic-large-v3 → large.v3, synthetic-tiny → tiny.
  preset="${model#synthetic-}"
  smoke_args=(--model "$model_path" --model-name "$model" --wav "$bundle/fixtures/jfk.wav" --dtw "${preset//-/.}")
  [[ $cpu -eq 1 ]] && smoke_args+=(--cpu)
  [[ -n "$out" ]] && smoke_args+=(--out "$out")
  log "smoke: benchmarks/gpu/smoke.ts ${smoke_args[*]}"
  (cd "$repo" && "$node" benchmarks/gpu/smoke.ts "${smoke_args[@]}") || log "smoke: a check failed (exit $?): see its JSON"
fi
[[ $smoke_only -eq 1 ]] && { log "smoke only: done"; exit 0; }

# 5. The transformers peer, at the batch sizes ours runs ----------------------------------------------
[[ -n "$batch_sizes" ]] || { if [[ $quick -eq 1 ]]; then batch_sizes=1,2; else batch_sizes=1,8,24,64; fi; }
[[ "$batch_sizes" == none ]] && batch_sizes=""
peer_json="$work/peer-transformers.json"
rm -f "$peer_json"
if [[ -n "$batch_sizes" && $peer -eq 1 ]]; then
  py="$(command -v python3 || command -v python || true)"
  if [[ -z "$py" ]]; then
    log "transformers peer: no python3 on this host"
    echo '{"ok": false, "error": "no python3 on this host"}' >"$peer_json"
  else
    peer_args=(--batch-sizes "$batch_sizes" --tokens "$tokens" --runs "$runs" --out "$peer_json")
    [[ $cpu -eq 1 ]] && peer_args+=(--device cpu)
    log "transformers peer: $py benchmarks/gpu/peer-transformers.py ${peer_args[*]}"
    "$py" "$repo/benchmarks/gpu/peer-transformers.py" "${peer_args[@]}" >"$work/peer-transformers.out" \
      2> >(tee "$work/peer-transformers.log" >&2) || log "transformers peer failed (exit $?): recorded in the result"
  fi
fi

# 6. Measure ------------------------------------------------------------------------------------------
args=(--bench "$bench_bin" --cli "$cli_bin" --model "$model_path" --model-name "$model" --wav "$bundle/fixtures/jfk.wav"
  --runs "$runs")
[[ $cpu -eq 1 ]] && args+=(--cpu)
[[ $quick -eq 1 ]] && args+=(--quick)
[[ -n "$batch_sizes" ]] && args+=(--batch-sizes "$batch_sizes" --tokens "$tokens")
[[ -n "$batch_sizes" && $peer -eq 1 ]] && args+=(--peer "$peer_json")
[[ -n "$out" ]] && args+=(--out "$out")
log "measure"
cd "$repo"
"$node" benchmarks/gpu/bench.ts "${args[@]}" "${extra[@]}"
[[ -n "$out" && -f "$peer_json" ]] && cp "$peer_json" "$out/" || true
