#!/usr/bin/env bash
# The CUDA build of the addon, whisper-cli and whisper-bench (sm_90), compiled on a development machine
# with no GPU and packed prebuilt into the GPU bundle, so that run.sh on an H100/H200 starts measuring
# instead of compiling (run.sh checks the manifest, the card and the libraries before it uses it).
# Called by pack.sh --prebuilt-cuda; the build tree (build/cmake-cuda-prebuilt) is kept, so a repack
# after a change to the addon recompiles only what changed.
#
#   bash benchmarks/gpu/prebuilt-cuda.sh OUT_DIR WHISPER_SRC_DIR [--cublas DIR|WHEEL] [--jobs N] [--full]
#
# By default ggml-cuda is the lean build (patches/0009: flash attention for head size 64 with f16/q8_0
# K/V, MMQ for q4_0/q5_0/q5_1/q8_0); --full compiles every kernel, as upstream.
# Needs nvcc (PATH or /usr/local/cuda/bin) and cuBLAS: the toolkit's own, or --cublas, a directory holding
# include/cublas_v2.h and lib/libcublas.so* (an extracted nvidia-cublas wheel's nvidia/cu13 is one) or the
# wheel itself, extracted once into ~/.cache/transcribe-cuda/. Where the toolkit has no driver stub
# (lib64/stubs/libcuda.so), it makes one: the few driver functions ggml-cuda calls, for the linker
# only (the GPU host's driver provides libcuda.so.1). The compile runs at nice 19 with 2 jobs by default.
# Writes OUT_DIR/prebuilt-cuda.tar.xz (the three binaries, stripped) and OUT_DIR/manifest.json. Each binary
# links ggml-cuda statically, so the three hold the same kernels: one xz stream over the three, one
# thread, with a dictionary larger than a binary, stores those kernels about once.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
[[ $# -ge 2 ]] || { echo "usage: prebuilt-cuda.sh OUT_DIR WHISPER_SRC_DIR [--cublas DIR|WHEEL] [--jobs N] [--full]" >&2; exit 2; }
out="$1"
wsrc="$(cd "$2" && pwd)"
shift 2
cublas_arg=""
jobs=2
lean=ON
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cublas) cublas_arg="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --full) lean=OFF; shift ;;
    *) echo "prebuilt-cuda: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "prebuilt-cuda: $*"; }
die() { echo "prebuilt-cuda: error: $*" >&2; exit 1; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/transcribe-cuda"

# The toolkit's own nvcc: the one on PATH may be a wrapper outside the toolkit (/usr/local/bin/nvcc).
nvcc=""
for c in "$(command -v nvcc || true)" /usr/local/cuda/bin/nvcc; do
  [[ -n "$c" && -x "$c" ]] || continue
  d="$(cd "$(dirname "$c")/.." && pwd)" # not resolved: the path the CMake tree was configured with
  if [[ -f "$d/include/cuda_runtime.h" ]]; then nvcc="$d/bin/nvcc"; toolkit="$d"; break; fi
done
[[ -n "$nvcc" ]] || die "no CUDA toolkit found (nvcc on PATH or /usr/local/cuda/bin/nvcc, beside include/cuda_runtime.h)"
nvcc_version="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/\1 (\2)/p')"

# cuBLAS: the toolkit's, else --cublas (a directory, or the wheel extracted into the cache).
cublas_root=""
for d in "$toolkit/lib64" "$toolkit/targets/x86_64-linux/lib"; do
  if ls "$d"/libcublas.so* >/dev/null 2>&1; then cublas_root="$toolkit"; cublas_lib="$d"; break; fi
done
if [[ -z "$cublas_root" ]]; then
  [[ -n "$cublas_arg" ]] || die "the CUDA toolkit at $toolkit has no cuBLAS: pass --cublas DIR|WHEEL (an nvidia-cublas wheel)"
  if [[ -f "$cublas_arg" ]]; then
    dest="$cache/$(basename "$cublas_arg" .whl)"
    if [[ ! -d "$dest/nvidia" ]]; then
      log "extracting $(basename "$cublas_arg") into $dest"
      rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
      python3 -m zipfile -e "$cublas_arg" "$dest.tmp" && mv "$dest.tmp" "$dest"
    fi
    cublas_arg="$(dirname "$(find "$dest" -name cublas_v2.h | head -1)")/.."
  fi
  cublas_arg="$(cd "$cublas_arg" && pwd)"
  [[ -f "$cublas_arg/include/cublas_v2.h" ]] || die "no include/cublas_v2.h under $cublas_arg"
  cublas_root="$cublas_arg"
  cublas_lib="$cublas_arg/lib"
  # find_library wants the unversioned names the wheel does not ship: links in the cache.
  links="$cache/cublas-links/$(echo "$cublas_root" | sha256sum | cut -c1-12)"
  mkdir -p "$links"
  for l in libcublas libcublasLt; do
    so="$(ls "$cublas_lib/$l.so."* | head -1)"
    ln -sfn "$so" "$links/$l.so"
  done
  cublas_lib="$links"
fi
cublas_so="$(readlink -f "$cublas_lib/libcublas.so" 2>/dev/null || ls "$cublas_lib"/libcublas.so.* | head -1)"
cublas_soname="$(readelf -d "$cublas_so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')"
cublas_version="$(basename "$(dirname "$(dirname "$cublas_root")")" | sed -n 's/^nvidia_cublas-\([0-9.]*\)-.*/\1/p')"
log "nvcc $nvcc_version ($toolkit); cuBLAS $cublas_soname ${cublas_version:+($cublas_version) }from $cublas_root"

# The driver: the toolkit's link stub, else one made here for the driver functions ggml-cuda calls.
driver="$toolkit/lib64/stubs/libcuda.so"
[[ -f "$driver" ]] || driver="$toolkit/targets/x86_64-linux/lib/stubs/libcuda.so"
if [[ ! -f "$driver" ]]; then
  syms="$(grep -ohE '\bcu[A-Z][A-Za-z0-9_]*\s*\(' "$wsrc"/ggml/src/ggml-cuda/*.cu "$wsrc"/ggml/src/ggml-cuda/*.cuh |
    tr -d ' (' | LC_ALL=C sort -u)"
  stub="$cache/libcuda-stub/$(echo "$syms" | sha256sum | cut -c1-12)"
  if [[ ! -f "$stub/libcuda.so" ]]; then
    mkdir -p "$stub"
    for s in $syms; do printf 'int %s(void) { return 999; }\n' "$s"; done >"$stub/stub.c"
    cc -shared -fPIC -o "$stub/libcuda.so" -Wl,-soname,libcuda.so.1 "$stub/stub.c"
  fi
  driver="$stub/libcuda.so"
  log "driver: a link stub for $(echo "$syms" | wc -w) functions ($driver)"
fi

build="$repo/build/cmake-cuda-prebuilt"
bin_out="$repo/build/prebuilt-cuda"
# ggml's CPU code for any x86-64-v3 host (the GPU host's CPU is not this one): no -march=native.
# No fatbinary compression (ggml's default is nvcc's -compress-mode=size): the binaries are xz'd below,
# so compressing each kernel image first only costs compile time.
flags=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
  -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_COMPRESSION_MODE=none -DWHISPER_ADDON_CUDA_LEAN=$lean)
log "configure → $build"
cmake -S "$repo/engine/asr/native" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DWHISPER_SOURCE_DIR="$wsrc" \
  -DNODE_API_HEADERS_DIR="$repo/node_modules/node-api-headers/include" \
  -DNODE_ADDON_API_DIR="$repo/node_modules/node-addon-api" \
  -DADDON_OUTPUT_DIR="$bin_out" "${flags[@]}" \
  -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCUDA_cublas_LIBRARY="$cublas_lib/libcublas.so" -DCUDA_cublasLt_LIBRARY="$cublas_lib/libcublasLt.so" \
  -DCUDA_cuda_driver_LIBRARY="$driver" \
  -DCMAKE_CUDA_FLAGS="-I$cublas_root/include" >"$repo/build/prebuilt-cuda-configure.log" 2>&1 ||
  { tail -30 "$repo/build/prebuilt-cuda-configure.log"; die "configure failed"; }
log "build (nice 19, $jobs jobs; log build/prebuilt-cuda-build.log)"
t0=$(date +%s.%N)
cpu0="$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)"
nice -n 19 cmake --build "$build" --target whisper_addon whisper-cli whisper-bench --parallel "$jobs" \
  >"$repo/build/prebuilt-cuda-build.log" 2>&1 || { tail -30 "$repo/build/prebuilt-cuda-build.log"; die "build failed"; }
wall="$(printf "%.1f" "$(echo "$(date +%s.%N) - $t0" | bc)")" # JSON: never ".03"
cpu="$(awk -v c0="$cpu0" -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14+$15+$16+$17-c0)/hz}' /proc/$$/stat)"
bench_bin="$(find "$build" -type f -name whisper-bench -perm -u+x | head -1)"

mkdir -p "$out"
rm -f "$out"/*.xz "$out/manifest.json"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp "$bin_out/whisper_addon.node" "$bin_out/bin/whisper-cli" "$bench_bin" "$stage/"
strip --strip-unneeded "$stage"/*
log "xz (one stream, dictionary 256 MiB: a few minutes)"
tar -C "$stage" -cf - whisper_addon.node whisper-cli whisper-bench |
  xz -T1 --lzma2=preset=9e,dict=256MiB -c >"$out/prebuilt-cuda.tar.xz"
sources="$(bash "$repo/benchmarks/gpu/sources-hash.sh" "$repo/engine/asr/native" "${SOURCES_WHISPER_DIR:-$wsrc}")"
commit="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
dirty="$(git -C "$repo" status --porcelain -- engine/asr/native 2>/dev/null | head -1)"
size() { stat -c %s "$1"; }
cat >"$out/manifest.json" <<JSON
{
  "what": "CUDA build of whisper_addon.node, whisper-cli and whisper-bench, made by benchmarks/gpu/pack.sh --prebuilt-cuda",
  "commit": "$commit",
  "nativeSourcesDirty": $([[ -n "$dirty" ]] && echo true || echo false),
  "sourcesHash": "$sources",
  "nvcc": "$nvcc_version",
  "cudaArchitectures": "90",
  "lean": $([[ $lean == ON ]] && echo true || echo false),
  "cublasSoname": "$cublas_soname",
  "cublasBuiltAgainst": "${cublas_version:-the toolkit}",
  "flags": "${flags[*]}",
  "buildWallSec": $wall,
  "buildCpuSec": $cpu,
  "buildJobs": $jobs,
  "bytes": {
    "whisper_addon.node": $(size "$stage/whisper_addon.node"),
    "whisper-cli": $(size "$stage/whisper-cli"),
    "whisper-bench": $(size "$stage/whisper-bench")
  },
  "strip": "strip --strip-unneeded",
  "tarXzBytes": $(size "$out/prebuilt-cuda.tar.xz"),
  "xz": "one stream: xz -T1 --lzma2=preset=9e,dict=256MiB"
}
JSON
log "built in ${wall%.*} s wall, $cpu s CPU; $(du -sh "$out" | cut -f1) packed in $out"
