#!/usr/bin/env bash
# Installs the Debian packages the project needs that a fresh machine may lack:
#   ffmpeg                    decoding
#   cmake, ninja-build, g++   the whisper.cpp addon build (on first use)
#   patch                     applies engine/asr/native/patches over upstream whisper.cpp
#   postgresql, redis-server  the test run starts throwaway instances where none answers
#   espeak-ng                 the tests' generated speech
#   iproute2                  the SSRF corpus' network namespace
#   chromium                  headless, for the browser tests
#   wamerican, wngerman, wfrench, wspanish, witalian, wdutch, wportuguese, wbrazilian
#                             word lists the filler lists are checked against (engine/edit/fillers.test.ts)
# Idempotent: does nothing when everything is present. Needs root (or sudo) only when it installs.
set -euo pipefail

need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
command -v patch >/dev/null || need+=(patch)
# Debian keeps PostgreSQL's server binaries off PATH, in /usr/lib/postgresql/<major>/bin.
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v espeak-ng >/dev/null || need+=(espeak-ng)
command -v ip >/dev/null || need+=(iproute2)
command -v chromium >/dev/null || need+=(chromium)
for w in american-english:wamerican ngerman:wngerman french:wfrench spanish:wspanish italian:witalian \
  dutch:wdutch portuguese:wportuguese brazilian:wbrazilian; do
  [ -e "/usr/share/dict/${w%%:*}" ] || need+=("${w##*:}")
done
[ ${#need[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "system-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
