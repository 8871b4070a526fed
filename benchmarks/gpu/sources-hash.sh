#!/usr/bin/env bash
# Prints the sha256 that names what a build of the addon, whisper-cli and whisper-bench is made from:
# every file of engine/asr/native (our addon, the batcher, the patches, the CMake project) and every
# file of the whisper.cpp build inputs (the tree pack.sh packs as whisper-src.tar.xz, unpacked).
# pack.sh --prebuilt-cuda writes it into the prebuilt CUDA build's manifest; run.sh compares it with
# the checkout's before it uses that build.
#   bash benchmarks/gpu/sources-hash.sh NATIVE_DIR WHISPER_SRC_DIR
set -euo pipefail
[[ $# -eq 2 && -d "$1" && -d "$2" ]] || { echo "usage: sources-hash.sh NATIVE_DIR WHISPER_SRC_DIR" >&2; exit 2; }
list() { (cd "$1" && find . -type f ! -path '*/build/*' ! -name .bundle-sha256 -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
{ echo native; list "$1"; echo whisper.cpp; list "$2"; } | sha256sum | cut -c1-64
