/**
 * `npm run demo` (issue 3): the scripted run shows the todo list being written, an attempt to
 * finish that both hooks object to, the fix through the filesystem server, the tests going
 * green, the todos closed and the stop accepted; the copied project's tests pass afterwards.
 * The demo shows the agent's stdout (the answer) and stderr (tool lines, objections, summary)
 * as one terminal would: a stderr line after unfinished text starts on a line of its own.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import process from "node:process";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

describe("npm run demo", { skip: !runsOnce && "runs once, under bun" }, () => {
  test("the scripted demo fixes the bug with both hooks objecting once, and the tests pass", async () => {
    const [cmd, ...args] = tsCommand(`${repoRoot}examples/demo/run.ts`, "node");
    const env = { ...process.env };
    for (const key of Object.keys(env)) {
      if (/^(SPROUT_AGENT_|ANTHROPIC_|OPENAI_COMPAT_|MCP_HOOK_SERVERS)/.test(key)) delete env[key];
    }
    const child = spawn(cmd!, args, { cwd: repoRoot, env: { ...env, NO_COLOR: "1" } });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, out);
    const order = [
      /✓ todo__todo \{"todos":\[\{"id":1,"title":"Run the test suite"\}/,
      /✓ tests__run_tests \{\} \(\d+ ms\) → FAILED: 1 failed, 2 passed/,
      // The agent's answer text (stdout) and its objection lines (stderr), each on a line of its own.
      /\nDone for now\.\n⟲ _Stop objection from todo: You have open todo items\. Keep working\./,
      /⟲ _Stop objection from tests: The test suite fails/,
      /✓ fs__edit_file/,
      /✓ tests__run_tests \{\} \(\d+ ms\) → PASSED: 0 failed, 3 passed/,
      /✓ todo__todo .*→ \[x\] 1\. Run the test suite/,
      /■ end_turn · 9 rounds · 7 tool calls · 1 objection \(2 hooks at once\) · /,
      /hook objections \(2; the agent's summary counts an end of turn several hooks objected to once\):/,
      /tests in the copied project: PASS \(3 pass, 0 fail\)/,
    ];
    let at = 0;
    for (const re of order) {
      const m = re.exec(out.slice(at));
      assert.ok(m, `expected ${re} after offset ${at} in:\n${out}`);
      at += m.index + m[0].length;
    }
    assert.doesNotMatch(out, /warning:/, "the demo run prints no warnings");
  });
});
