#!/usr/bin/env bash
# The whole suite: type-check, doc lint, format and lint checks, then the same test files under Node (tsx), Bun and Deno.
# Called by `npm test`. Each runner's end-to-end tests spawn the agent under that runner's
# runtime; runtime-independent slow checks run once (see tests/helpers/runtime.ts).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
export NO_COLOR=1
files=(tests/*.test.ts)
status=0
step() {
  local name=$1; shift
  local start=$SECONDS
  echo "::: $name: $*"
  if "$@"; then echo "::: $name passed in $((SECONDS - start)) s"; else echo "::: $name FAILED in $((SECONDS - start)) s"; status=1; fi
}
step tsc tsc --noEmit -p tsconfig.json
# Every export of the public entry points has JSDoc and references only exported types.
# --quiet hides deno's warnings about @types/node; lint errors are still printed.
step doc-lint deno doc --lint --quiet mod.ts testing.ts
# Formatting and lint rules are deno.json's (fmt: lineWidth 120, code and JSON; lint: the recommended set).
step fmt deno fmt --check --quiet
step lint deno lint --quiet
# The JSR package: the publish list and no slow types in the public API (no upload).
step publish-dry-run deno publish --dry-run --allow-dirty --quiet
step node node --import tsx --test --test-concurrency=2 "${files[@]}"
# Bun runs one file at a time: two processes, each with every other file, like Node's two at a
# time; each one's output is printed whole when both are done. The load test measures latency
# (every _Stop under 1 s), so it runs alone afterwards.
alone=tests/reliability-load.test.ts
bun_two() {
  local halves=("" "") i n=0 rc=0 pids=() outs=()
  for i in "${!files[@]}"; do
    [ "${files[i]}" = "$alone" ] && continue
    halves[n % 2]+="./${files[i]}"$'\n'
    n=$((n + 1))
  done
  for i in 0 1; do
    outs[i]=$(mktemp)
    # shellcheck disable=SC2086
    (IFS=$'\n'; exec bun test --timeout 120000 ${halves[i]}) >"${outs[i]}" 2>&1 &
    pids[i]=$!
  done
  for i in 0 1; do wait "${pids[i]}" || rc=1; cat "${outs[i]}"; rm -f "${outs[i]}"; done
  bun test --timeout 120000 "./$alone" || rc=1
  return "$rc"
}
step bun bun_two
# Deno runs two files at a time like Node (the files never share ports or folders), and skips
# its own type check: the tsc step above already checked every file.
step deno env DENO_JOBS=2 deno test -A --quiet --no-check --parallel "${files[@]}"
if [ "$status" -eq 0 ]; then echo "::: all runners passed"; else echo "::: some runner failed"; fi
exit "$status"
