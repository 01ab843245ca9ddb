/**
 * The recap at the end of `npm test` (scripts/recap.mjs, called by scripts/test.sh; issue 21):
 * one line per runner with its counts, the failed steps, and the failing tests by name, read
 * from each runner's output. The outputs below are the three runners' own, trimmed, for one
 * file with a passing, a failing, a skipped and a nested failing test. The script runs as
 * test.sh runs it, under plain Node.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "./helpers/runtime.ts";

const NODE = `TAP version 13
# Subtest: recap demo
    # Subtest: passes
    ok 1 - passes
      ---
      duration_ms: 0.490889
      ...
    # Subtest: fails on purpose
    not ok 2 - fails on purpose
      ---
      duration_ms: 0.807275
      location: '/work/main/node_modules/.cache/sprout-agent-tests/suite/tests/demo.test.mjs:6:3'
      failureType: 'testCodeFailure'
      error: |-
        Expected values to be strictly equal:
      ...
    # Subtest: is skipped
    ok 3 - is skipped # SKIP demo
      ---
      duration_ms: 0.082847
      ...
    # Subtest: not yet
    not ok 4 - not yet # TODO later
      ---
      duration_ms: 0.1
      location: '/work/main/node_modules/.cache/sprout-agent-tests/suite/tests/demo.test.mjs:8:3'
      failureType: 'testCodeFailure'
      ...
    # Subtest: inner
        # Subtest: fails too
        not ok 1 - fails too
          ---
          duration_ms: 1.158894
          location: '/work/main/node_modules/.cache/sprout-agent-tests/suite/tests/demo.test.mjs:10:5'
          failureType: 'testCodeFailure'
          error: 'boom'
          ...
        1..1
    not ok 5 - inner
      ---
      duration_ms: 1.401656
      type: 'suite'
      location: '/work/main/node_modules/.cache/sprout-agent-tests/suite/tests/demo.test.mjs:9:3'
      failureType: 'subtestsFailed'
      error: '1 subtest failed'
      ...
    1..5
not ok 1 - recap demo
  ---
  type: 'suite'
  failureType: 'subtestsFailed'
  ...
# Subtest: fine
ok 2 - fine
  ---
  duration_ms: 0.78186
  ...
1..2
# tests 6
# suites 2
# pass 2
# fail 2
# cancelled 0
# skipped 1
# todo 1
# duration_ms 85.930293
`;

const BUN = `bun test v1.4.5 (a7733435c) 3x PARALLEL

tests/demo.test.ts:
(pass) recap demo > passes [0.69ms]
AssertionError: Expected values to be strictly equal:
(fail) recap demo > fails on purpose [0.74ms]
(skip) recap demo > is skipped
error: boom
(fail) recap demo > inner > fails too [0.09ms]

tests/ok.test.ts:
(pass) fine [1.13ms]

 2 pass
 1 skip
 2 fail
Ran 5 tests across 2 files. [35.00ms]

2 tests failed:
(fail) recap demo > fails on purpose [0.74ms]
(fail) recap demo > inner > fails too [0.09ms]
`;

const DENO = `./tests/demo.test.ts => recap demo ... passes ... ok (0ms)
./tests/demo.test.ts => recap demo ... fails on purpose ... FAILED (1ms)
./tests/demo.test.ts => recap demo ... is skipped ... ignored (0ms)
./tests/demo.test.ts => recap demo ... inner ... fails too ... FAILED (0ms)
./tests/demo.test.ts => recap demo ... inner ... FAILED (due to 1 failed step) (1ms)
./tests/demo.test.ts => recap demo ... FAILED (due to 2 failed steps) (3ms)
./tests/demo.test.ts => top-level failure ... FAILED (626µs)
./tests/ok.test.ts => fine ... ok (3ms)

 ERRORS 

recap demo ... fails on purpose => ext:deno_node/testing.ts:1:21231
error: AssertionError: Expected values to be strictly equal:

 FAILURES 

recap demo ... fails on purpose => ext:deno_node/testing.ts:1:21231
recap demo ... inner ... fails too => ext:deno_node/testing.ts:1:21231
top-level failure => ./tests/demo.test.ts:14:1

FAILED | 1 passed (1 step) | 2 failed (3 steps) | 0 ignored (1 step) (31ms)

error: Test failed
`;

function recap(args: string[], outputs: Record<string, string>): { code: number | null; lines: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "sprout-recap-"));
  try {
    for (const [name, text] of Object.entries(outputs)) writeFileSync(join(dir, name), text);
    const ran = spawnSync("node", [join(repoRoot, "scripts/recap.mjs"), ...args.map((a) => a.replace("DIR", dir))], {
      encoding: "utf8",
    });
    assert.equal(ran.stderr, "");
    return { code: ran.status, lines: ran.stdout.split("\n").filter((l) => l !== "") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the recap of npm test (scripts/recap.mjs)", () => {
  test("one line per runner with its counts, the failed steps, then each failing test with its file", () => {
    const { code, lines } = recap(
      ["--failed-steps", "tsc lint", "node=node:1:DIR/node", "bun=bun:1:DIR/bun", "deno=deno:1:DIR/deno"],
      { node: NODE, bun: BUN, deno: DENO },
    );
    assert.equal(code, 0, "the recap's own status; test.sh's comes from the runners");
    assert.deepEqual(lines, [
      "::: recap",
      "node   FAILED (exit 1) · 2 passed, 2 failed, 1 skipped, 1 todo",
      "bun    FAILED (exit 1) · 2 passed, 2 failed, 1 skipped",
      "deno   FAILED (exit 1) · 1 passed (1 step), 2 failed (3 steps), 0 ignored (1 step) (a describe counts as a test, its tests as steps)",
      "steps  failed: tsc, lint",
      "failing tests:",
      "  node   tests/demo.test.ts: recap demo > fails on purpose",
      "  node   tests/demo.test.ts: recap demo > inner > fails too",
      "  bun    tests/demo.test.ts: recap demo > fails on purpose",
      "  bun    tests/demo.test.ts: recap demo > inner > fails too",
      "  deno   tests/demo.test.ts: recap demo > fails on purpose",
      "  deno   tests/demo.test.ts: recap demo > inner > fails too",
      "  deno   tests/demo.test.ts: top-level failure",
    ]);
  });

  test("passing runners say ok; a runner without a summary or an output file says so", () => {
    const pass = "# pass 3\n# fail 0\n# skipped 0\n";
    // Deno leaves out "| 0 ignored"; its durations may read "(1m2s)".
    const deno = "ok | 2 passed (6 steps) | 0 failed (1m2s)\n";
    const { code, lines } = recap(
      ["node=node:0:DIR/node", "bun=bun:1:DIR/crashed", "deno=deno:0:DIR/deno", "load=bun:1:DIR/none"],
      { node: pass, crashed: "error: Cannot find module 'x'\n", deno },
    );
    assert.equal(code, 0);
    assert.deepEqual(lines, [
      "::: recap",
      "node  ok · 3 passed, 0 failed, 0 skipped",
      "bun   FAILED (exit 1) · no summary in its output (it crashed, or was killed): error: Cannot find module 'x'",
      "deno  ok · 2 passed (6 steps), 0 failed, 0 ignored (a describe counts as a test, its tests as steps)",
      "load  FAILED (exit 1) · no summary in its output (it crashed, or was killed)",
    ]);
  });

  test("a runner stopped at its time limit says so, with the last test it reported", () => {
    const out =
      "(pass) a > one [2.00ms]\n(pass) a > two [1.00ms]\n::: stopped after 1200 s (SPROUT_TEST_RUNNER_SECS): bun was still running\n";
    const { lines } = recap(["bun=bun:124:DIR/bun"], { bun: out });
    assert.deepEqual(lines, [
      "::: recap",
      "bun  FAILED (exit 124) · stopped after 1200 s, the time limit (SPROUT_TEST_RUNNER_SECS); the last test it reported: (pass) a > two [1.00ms]",
    ]);
  });

  test("a malformed argument is a usage error", () => {
    const ran = spawnSync("node", [join(repoRoot, "scripts/recap.mjs"), "node=/tmp/out"], { encoding: "utf8" });
    assert.equal(ran.status, 2);
    assert.match(ran.stderr, /^usage: node scripts\/recap\.mjs/);
  });
});
