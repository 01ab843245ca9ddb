/**
 * `npm run bench` must not rot: the harness runs its smallest group (`loop`, `--quick`, the
 * current runtime only, one child process) and prints a well-formed table, and the `tools`
 * group (issue 22: its SDK fixture servers and command hook) yields its rows. No timing is
 * asserted: speed belongs to the bench itself (docs/PERFORMANCE.md). The run itself is a few
 * seconds of full CPU and the harness is the same code whatever runs it, so it runs once
 * (under Bun, tests/helpers/runtime.ts).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { currentRuntime, formatTable, row } from "../bench/harness.ts";
import { GROUPS, runBench } from "../bench/bench.ts";
import { runsOnce } from "./helpers/runtime.ts";

const ONCE = { skip: !runsOnce && "runs once, under bun" };

describe("bench harness", () => {
  test("the loop group in quick mode yields one table of finite ratios, one line per row", ONCE, async () => {
    const lines: string[] = [];
    const rows = await runBench({
      groups: ["loop"],
      quick: true,
      runtimes: [currentRuntime()],
      log: (line) => lines.push(line),
    });
    assert.equal(rows.length, 3);
    for (const r of rows) {
      assert.equal(r.group, "loop");
      assert.match(r.case, / vs /);
      assert.ok(["ms", "µs"].includes(r.unit), r.unit);
      for (const n of [r.value, r.baseline, r.ratio]) assert.ok(Number.isFinite(n) && n > 0, JSON.stringify(r));
      assert.equal(r.ratio, r.value / r.baseline);
    }
    const table = formatTable(rows).split("\n");
    assert.equal(table.length, 2 + rows.length);
    assert.match(table[0]!, /^\| group +\| case +\| +value \| +baseline \| +ratio \|$/);
    for (const line of table.slice(2)) {
      assert.equal(line.split("|").length, 7, line);
      assert.match(line, /^\| loop /);
      // Two decimals, three below 0.1 (a quick run on a busy machine can measure one that low).
      assert.match(line, /(\d+\.\d\d|0\.0\d\d)× \|$/);
    }
    assert.ok(lines.some((l) => l.startsWith("# loop")));
  });

  test(
    "the tools group in quick mode yields nine rows per runtime, each a subject against a baseline",
    ONCE,
    async () => {
      const which = currentRuntime();
      const rows = await runBench({ groups: ["tools"], quick: true, runtimes: [which], log: () => {} });
      assert.equal(rows.length, 9);
      for (const r of rows) {
        assert.equal(r.group, "tools");
        assert.match(r.case, new RegExp(`^${which}: .+ vs `));
        for (const n of [r.value, r.baseline, r.ratio]) assert.ok(Number.isFinite(n), JSON.stringify(r));
        assert.equal(r.ratio, r.value / r.baseline);
      }
      assert.ok(rows.some((r) => r.case.includes("added per call: stdio _PreToolUse vs node command hook")));
    },
  );

  test("a throughput row's ratio is baseline over value, so above 1 always means slower", () => {
    assert.equal(row("http", "a vs b", 100, 400, "req/s", true).ratio, 4);
    assert.equal(row("cold", "a vs b", 300, 100, "ms").ratio, 3);
  });

  test("ratios print with two decimals, three below 0.1, so a small one does not read as 0.00", () => {
    const ratios = formatTable([row("loop", "a vs b", 1, 50, "ms"), row("loop", "c vs d", 150, 100, "ms")])
      .split("\n").slice(2).map((line) => line.match(/([\d.]+)× \|$/)?.[1]);
    assert.deepEqual(ratios, ["0.020", "1.50"]);
  });

  test("an unknown group is refused with the list of groups", async () => {
    await assert.rejects(
      runBench({ groups: ["nope"], log: () => {} }),
      new RegExp(`^Error: Unknown bench group "nope": expected one of ${GROUPS.map((g) => g.name).join(", ")}$`),
    );
  });
});
