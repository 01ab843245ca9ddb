#!/usr/bin/env bash
# The whole suite: type-check, doc lint, format and lint checks, then the same test files under
# Node, Bun and Deno. Called by `npm test`. Each runner's end-to-end tests spawn the agent under
# that runner's runtime; runtime-independent slow checks run once (see tests/helpers/runtime.ts).
#
# The three runners run at the same time, each several files at once: most of a test's time is
# waiting (timeouts, pauses, child processes starting), so one runner alone leaves the cores
# idle, and together they keep both busy (docs/PERFORMANCE.md, "The suite"). Each runner's
# output is kept and printed whole when it is done, in the order Node, Bun, Deno. The load test
# measures latency (every _Stop under 1 s), so it runs alone afterwards. The last lines are a
# recap (scripts/recap.mjs): one line per runner with its passed, failed and skipped counts,
# the steps that failed, and the failing tests by name; the exit status is the runners' and
# steps' own, whatever the recap reads.
#
# Arguments, when given, are the test files to run instead of tests/*.test.ts (the steps
# before the runners still check the whole tree): `npm test -- tests/x.test.ts tests/y.test.ts`.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
export NO_COLOR=1
# Node 20 reads and parses NODE_EXTRA_CA_CERTS at every start, before any code runs: with
# this machine's bundle (220 KB, ~140 certificates) that is 0.08 s of CPU per process, and the
# suite starts about 570 Node processes (45 s of CPU; docs/PERFORMANCE.md). No test makes a
# TLS connection (the fake LLMs and servers are plain HTTP on 127.0.0.1; npm runs --offline),
# so the suite runs without it. Bun and Deno start no slower with it.
unset NODE_EXTRA_CA_CERTS
if [ $# -gt 0 ]; then files=("$@"); else files=(tests/*.test.ts); fi
alone=tests/reliability-load.test.ts
status=0
failed_steps=()
# The runners' outputs, kept for the recap, removed on exit.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Every agent the tests start keeps its transcript in the state folder (SPEC section 12): the
# suite's go to a folder of its own, never to the user's ~/.local/state.
export XDG_STATE_HOME="$tmp/state"
step() {
  local name=$1; shift
  local start=$SECONDS
  echo "::: $name: $*"
  if "$@"; then
    echo "::: $name passed in $((SECONDS - start)) s"
  else
    echo "::: $name FAILED in $((SECONDS - start)) s"
    status=1
    failed_steps+=("$name")
  fi
}
step tsc tsc --noEmit -p tsconfig.json
# Every export of the public entry points has JSDoc and references only exported types.
# --quiet hides deno's warnings about @types/node; lint errors are still printed.
step doc-lint deno doc --lint --quiet mod.ts testing.ts stores/redis.ts
# Formatting and lint rules are deno.json's (fmt: lineWidth 120, code and JSON; lint: the recommended set).
step fmt deno fmt --check --quiet
step lint deno lint --quiet
# The JSR package: the publish list and no slow types in the public API (no upload). Slow
# types are checked with --no-check too; the type check itself is the tsc step's.
step publish-dry-run deno publish --dry-run --allow-dirty --quiet --no-check

# No runner can hang the suite. A runner still running after SPROUT_TEST_RUNNER_SECS (default
# 1200 s; a runner takes about 180 s on these machines) is stopped with its whole process group
# (GNU timeout signals the group it leads: the test processes and every agent, server and peer
# they started), TERM first and KILL 30 s later; its output so far is printed and it fails.
# Node's runner also fails any one test after 300 s (--test-timeout) and names it; Bun's after
# 120 s (--timeout). Every SPROUT_TEST_HEARTBEAT_SECS (default 60 s) a line tells which runners
# are still running and the last test each one reported, so a slow CI shows where it is.
runner_secs=${SPROUT_TEST_RUNNER_SECS:-1200}
bounded() {
  timeout --kill-after=30 "$runner_secs" "$@"
  local rc=$?
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || echo "::: stopped after $runner_secs s (SPROUT_TEST_RUNNER_SECS): $1 was still running"
  return "$rc"
}
# Every process the suite starts carries this mark in its environment; those still alive when
# the runners are done (a server a test forgot to stop) are named and killed, so none outlives
# the suite holding its output open.
export SPROUT_TEST_SUITE_MARK="sprout-agent-suite-$$-$RANDOM"

# Node 20 cannot strip types: its runner runs the test files compiled by esbuild, the compiler
# tsx uses (scripts/bundle-tests.mjs), which saves each of its test processes the ~0.6 s tsx
# takes to start, in four test processes, each importing every fourth file (as Bun's runner
# runs many files in one process), not one process per file: a Node test process costs ~0.25 s
# of CPU to start and load the modules the files share. The report names the group
# (group-N.test.mjs) and each test by its describe and name.
# `node --import tsx --test tests/x.test.ts` runs one file from source.
node_runner() {
  local groups
  groups=$(node scripts/bundle-tests.mjs --groups 4 "${files[@]}") || return 1
  # shellcheck disable=SC2086
  (IFS=$'\n'; bounded node --test --test-concurrency=4 --test-timeout=300000 $groups)
}
# The files whose tests wait longest (timeouts, pauses, children) go first in Bun's and Deno's
# queues, so that no long file starts last and runs on alone; the rest follow in name order.
slow=(reliability-servers reliability-model hello-hook tool-guard mcp-interop cases e2e-cli loop hooks mcp-client
  mcp-list-changes)
queue=()
for i in "${slow[@]}"; do [[ " ${files[*]} " == *" tests/$i.test.ts "* ]] && queue+=("tests/$i.test.ts"); done
for i in "${files[@]}"; do
  [ "$i" = "$alone" ] || [[ " ${queue[*]} " == *" $i "* ]] || queue+=("$i")
done
# Bun runs the files in three worker processes, each taking the next file when it is done;
# --no-isolate keeps one global per worker, as one `bun test` process runs its files.
bun_runner() { bounded bun test --timeout 120000 --parallel=3 --no-isolate "${queue[@]/#/./}"; }
# Deno runs three files at a time (the files never share ports or folders), and skips its own
# type check: the tsc step above already checked every file.
deno_runner() { DENO_JOBS=3 bounded deno test -A --quiet --no-check --parallel "${queue[@]}"; }

names=(node bun deno)
commands=(node_runner bun_runner deno_runner)
outs=() pids=() codes=()
started=$SECONDS
for i in "${!names[@]}"; do
  outs[i]="$tmp/${names[i]}.out"
  # shellcheck disable=SC2086
  # Each runner its own state folder: the runners run the same tests at the same time.
  (export XDG_STATE_HOME="$tmp/state-${names[i]}"; start=$SECONDS; ${commands[i]}; rc=$?; echo "::: ${names[i]} $([ $rc = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"; exit $rc) </dev/null >"${outs[i]}" 2>&1 &
  pids[i]=$!
done
echo "::: runners: ${names[*]} at the same time"
# The heartbeat: which runners are still running, with the last line each printed that names a
# test (Node's `ok`/`not ok`, Bun's `(pass)`/`(fail)`, Deno's `... ok`/`... FAILED`).
heartbeat() {
  local every=${SPROUT_TEST_HEARTBEAT_SECS:-60} sleeper
  trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM # its sleep must not outlive it
  while :; do
    sleep "$every" &
    sleeper=$!
    wait "$sleeper"
    local line="::: $((SECONDS - started)) s:"
    for i in "${!names[@]}"; do
      kill -0 "${pids[i]}" 2>/dev/null || continue
      local last
      last=$(grep -E '^ *(not )?ok [0-9]+ - |^\((pass|fail)\) |\.\.\. (ok|FAILED)' "${outs[i]}" 2>/dev/null | tail -1 | cut -c1-100)
      line+=" ${names[i]} running (last: ${last:-none yet});"
    done
    echo "$line"
  done
}
heartbeat &
heartbeat_pid=$!
for i in "${!names[@]}"; do
  wait "${pids[i]}"
  codes[i]=$?
  [ "${codes[i]}" -eq 0 ] || status=1
  cat "${outs[i]}"
done
echo "::: runners done in $((SECONDS - started)) s"
kill "$heartbeat_pid" 2>/dev/null
wait "$heartbeat_pid" 2>/dev/null
# Leftovers: processes that still carry the suite's mark (but this shell and its own children).
sweep() {
  local left=()
  for env in /proc/[0-9]*/environ; do
    local pid=${env#/proc/}
    pid=${pid%/environ}
    [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
    grep -qz "^SPROUT_TEST_SUITE_MARK=$SPROUT_TEST_SUITE_MARK$" "$env" 2>/dev/null || continue
    [ "$(cut -d' ' -f4 "/proc/$pid/stat" 2>/dev/null)" = "$BASHPID" ] && continue
    left+=("$pid")
  done
  [ ${#left[@]} -gt 0 ] || return 0
  echo "::: ${#left[@]} process(es) the tests started were still running; stopped:"
  for pid in "${left[@]}"; do echo ":::   $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)"; done
  kill -TERM "${left[@]}" 2>/dev/null
  sleep 2
  kill -KILL "${left[@]}" 2>/dev/null
  return 0
}
sweep
recap_runs=()
for i in "${!names[@]}"; do recap_runs+=("${names[i]}=${names[i]}:${codes[i]}:${outs[i]}"); done
if [[ " ${files[*]} " == *" $alone "* ]]; then
  # Shown as it runs and kept for the recap; with pipefail the step gets bun's status.
  load_runner() { bounded bun test --timeout 120000 "./$alone" 2>&1 | tee "$tmp/load.out"; }
  step load load_runner
  load_code=0
  [[ " ${failed_steps[*]:-} " == *" load "* ]] && load_code=1
  recap_runs+=("load=bun:$load_code:$tmp/load.out")
fi
if [ "$status" -eq 0 ]; then echo "::: all runners passed"; else echo "::: some runner failed"; fi
node scripts/recap.mjs --failed-steps "${failed_steps[*]:-}" "${recap_runs[@]}" || echo "::: the recap could not be made (the exit status is unchanged)"
exit "$status"
