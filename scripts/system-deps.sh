#!/usr/bin/env bash
# Installs the Debian packages the project needs that a fresh machine may lack: ffmpeg (decoding),
# cmake, ninja and g++ (the whisper.cpp addon build), iproute2 (the SSRF corpus' network namespace),
# chromium (headless, for the browser tests).
# Idempotent: does nothing when everything is present. Needs root (or sudo) only when it installs.
set -euo pipefail

need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v espeak-ng >/dev/null || need+=(espeak-ng)
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
command -v ip >/dev/null || need+=(iproute2)
command -v chromium >/dev/null || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "system-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
