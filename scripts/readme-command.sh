#!/usr/bin/env bash
# Prints the README's quick-start command N (1: install and transcribe, 2: the tests), exactly as
# the README writes it: the Nth line that is neither blank nor a comment in the first ```sh block
# under "## Quick start". CI runs what this prints, so the README cannot drift from what is tested.
#   usage: scripts/readme-command.sh N [README]
set -euo pipefail
n=${1:?usage: readme-command.sh N [README]}
readme=${2:-"$(dirname "$0")/../README.md"}
cmd=$(awk -v n="$n" '
  /^## Quick start/ { inside = 1; next }
  inside && /^## / { exit }
  inside && !block && /^```sh$/ { block = 1; next }
  block && /^```/ { exit }
  block && !/^[[:space:]]*(#|$)/ { if (++seen == n) { print; exit } }
' "$readme")
[ -n "$cmd" ] || { echo "readme-command: no command $n in the quick start of $readme" >&2; exit 1; }
printf '%s\n' "$cmd"
