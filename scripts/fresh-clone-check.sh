#!/usr/bin/env bash
# The front door, as a new user meets it: clones HEAD into an empty temp folder (nothing beside it,
# so no ../shared), runs the README's command 1 there exactly as the README writes it, with no stdin
# and npm's `yes` false, and checks that it exits 0, prints a WebVTT document with cues on stdout,
# and that npm printed no warning or error.
#   --tests   then runs the README's command 2 in the same clone, inside a new network namespace
#             where nothing listens on loopback (root only), so it must start what it needs.
#             Command 2 also runs in a PID namespace of its own with TMPDIR inside the work folder:
#             a process it leaves running, or a folder or file it leaves in TMPDIR, is a failed check (and
#             the namespace's end kills whatever was left).
#   --load N  runs N CPU-bound busy processes beside command 2 (beside command 1 without --tests),
#             as a busy machine would; they stop on every way out of this script, and by themselves
#             within a second if it is killed outright.
#   --keep    leaves the clone (its path is printed) instead of deleting it.
# Exit 0 when every check holds; 1 with one line per failed check otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tests=0 keep=0 load=0
while [ $# -gt 0 ]; do
  case $1 in
    --tests) tests=1 ;;
    --keep) keep=1 ;;
    --load) load=${2:-}; shift ;;
    --load=*) load=${1#--load=} ;;
    *) echo "fresh-clone-check: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case $load in
  '' | *[!0-9]*) echo "fresh-clone-check: --load takes a number of busy processes, not '$load'" >&2; exit 2 ;;
esac

work=$(mktemp -d /tmp/fresh-clone.XXXXXX)
# Command 2's throwaway PostgreSQL runs as the postgres user (as root) and keeps its folder in TMPDIR.
chmod 755 "$work"
load_pids=()
stop_load() {
  [ "${#load_pids[@]}" -gt 0 ] || return 0
  kill "${load_pids[@]}" 2>/dev/null || true
  wait "${load_pids[@]}" 2>/dev/null || true
  load_pids=()
}
start_load() {
  local i
  for ((i = 0; i < load; i++)); do
    # Busy, and watching this script: each stops within a second of it going, even on SIGKILL.
    bash -c 'while kill -0 "$1" 2>/dev/null; do for ((j = 0; j < 20000; j++)); do :; done; done' _ "$$" &
    load_pids+=("$!")
  done
  [ "$load" = 0 ] || echo "fresh-clone-check: $load busy process(es) beside the run: ${load_pids[*]}"
}
cleanup() {
  stop_load
  if [ "$keep" = 1 ]; then echo "fresh-clone-check: kept $work/repo"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
git clone -q "$here" "$work/repo"
cd "$work/repo"
echo "fresh-clone-check: clone of $(git rev-parse --short HEAD) in $work/repo (nothing beside it)"

failed=0
fail() { echo "fresh-clone-check: FAILED: $*"; failed=1; }

cmd1=$(bash scripts/readme-command.sh 1 README.md)
echo "fresh-clone-check: command 1: $cmd1"
[ "$tests" = 1 ] || start_load
start=$(date +%s)
set +e
npm_config_yes=false bash -c "$cmd1" </dev/null >"$work/out1" 2>"$work/err1"
rc=$?
set -e
stop_load
echo "fresh-clone-check: command 1 exited $rc after $(($(date +%s) - start)) s"
[ "$rc" = 0 ] || fail "command 1 exited $rc; the end of its stderr:$(printf '\n'; tail -20 "$work/err1")"
if grep -hE '^npm (warn|WARN|error|ERR)' "$work/out1" "$work/err1" >"$work/npm-lines"; then
  fail "npm printed warnings or errors:$(printf '\n'; head -20 "$work/npm-lines")"
fi
# The WebVTT document is what follows npm's own lines on stdout; a real parser judges it.
if [ -x node_modules/.bin/node ]; then
  node_modules/.bin/node --input-type=module -e '
    import { readFileSync } from "node:fs";
    import webvtt from "webvtt-parser";
    const { WebVTTParser } = webvtt;
    const out = readFileSync(process.argv[1], "utf8");
    const at = out.search(/^WEBVTT$/m);
    if (at < 0) { console.log("no WEBVTT line on stdout"); process.exit(1); }
    const tree = new WebVTTParser().parse(out.slice(at), "metadata");
    if (tree.errors.length > 0) { console.log(`WebVTT errors: ${JSON.stringify(tree.errors)}`); process.exit(1); }
    if (tree.cues.length === 0) { console.log("the WebVTT document has no cues"); process.exit(1); }
    console.log(`fresh-clone-check: stdout holds a valid WebVTT document with ${tree.cues.length} cue(s)`);
  ' "$work/out1" || fail "stdout is not a WebVTT document with cues"
else
  fail "node_modules/.bin/node is missing after command 1"
fi

if [ "$tests" = 1 ] && [ "$failed" = 0 ]; then
  cmd2=$(bash scripts/readme-command.sh 2 README.md)
  if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    fail "--tests needs root and unshare(1) for its empty network namespace"
  else
    echo "fresh-clone-check: command 2 in an empty network namespace and a PID namespace of its own: $cmd2"
    mkdir -m 1777 "$work/tmp"
    start_load
    start=$(date +%s)
    set +e
    # The CPU of command 2 and every process it waited for (issue #31's budget): /usr/bin/time where
    # Debian's `time` package is installed, else bash's own `time`, which counts the same. Then, still
    # inside the namespace (this shell is its PID 1), every process the run left behind.
    TMPDIR="$work/tmp" unshare --net --pid --fork --mount-proc bash -c '
      ip link set lo up
      line="fresh-clone-check: command 2 used %U s user + %S s system CPU"
      if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "$line, %e s wall (/usr/bin/time)" bash -c "$1"
      else
        TIMEFORMAT="$line, %R s wall (bash time)"
        time bash -c "$1"
      fi
      rc=$?
      for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$pid" = 1 ] && continue
        args=$(tr "\0" " " <"$p/cmdline" 2>/dev/null) || continue
        [ -n "$args" ] && echo "$pid $args"
      done >"$2"
      exit "$rc"' _ "$cmd2" "$work/left-running" </dev/null 2>&1 | tee "$work/out2"
    rc=${PIPESTATUS[0]}
    set -e
    stop_load
    echo "fresh-clone-check: command 2 exited $rc after $(($(date +%s) - start)) s"
    [ "$rc" = 0 ] || fail "command 2 exited $rc"
    if [ -s "$work/left-running" ]; then
      fail "command 2 left processes running (killed with its namespace):$(printf '\n'; head -20 "$work/left-running")"
    fi
    # Anything at all: a folder, or a file such as the `.ses` and `mat-debug-<pid>.log` that
    # onnxruntime's telemetry wrote until the engine turned it off.
    if [ -n "$(find "$work/tmp" -mindepth 1 -maxdepth 1)" ]; then
      fail "command 2 left entries in its TMPDIR:$(printf '\n'; find "$work/tmp" -mindepth 1 -maxdepth 1 | head -20)"
    fi
    if [ -f .test-output/vitest.json ]; then
      node_modules/.bin/node scripts/test-durations.ts --top 10 || true
      # The whole report and CPU log, kept in the calling checkout (git-ignored) for a results table:
      # npm run test:durations -- --markdown .test-output/fresh-clone/vitest.json .test-output/fresh-clone/cpu.jsonl
      mkdir -p "$here/.test-output/fresh-clone"
      cp .test-output/vitest.json .test-output/cpu.jsonl "$here/.test-output/fresh-clone/" 2>/dev/null || true
    fi
  fi
fi

[ "$failed" = 0 ] && echo "fresh-clone-check: ok"
exit "$failed"
