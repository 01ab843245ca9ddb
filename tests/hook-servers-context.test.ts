/**
 * What the example hook servers do with the issue 12 hook points and context: the
 * todo-enforcer's `_SessionStart` and `_SessionEnd` texts, and the test-gate following the `cwd`
 * the agent sends in `_meta["sprout-agent/hook"]` when no folder is configured
 * (servers/test-gate/gates.ts), through the real app over an in-process MCP client.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createApp } from "../servers/test-gate/app.ts";
import { agentCwd, Gates } from "../servers/test-gate/gates.ts";
import { gateOptions } from "../servers/test-gate/options.ts";
import { sessionEndText, sessionStartText } from "../servers/todo-enforcer/todo.ts";
import { appFetch, httpClient, resultText } from "./helpers/hook-servers.ts";

describe("todo-enforcer: _SessionStart and _SessionEnd texts", () => {
  test("_SessionStart returns the list while an item is open, else nothing", () => {
    assert.equal(sessionStartText([]), "");
    assert.equal(sessionStartText([{ id: 1, title: "a", done: true }]), "");
    assert.equal(
      sessionStartText([{ id: 1, title: "a", done: true }, { id: 2, title: "b", done: false }]),
      "# Todo List (restored from an earlier run of this session)\n[x] 1. a\n[ ] 2. b  ← next",
    );
  });

  test("_SessionEnd names what was left open, else nothing", () => {
    assert.equal(sessionEndText([{ id: 1, title: "a", done: true }]), "");
    assert.equal(sessionEndText([{ id: 3, title: "c", done: false }]), "1 todo item left open: 3. c");
    assert.equal(
      sessionEndText([{ id: 3, title: "c", done: false }, { id: 4, title: "d", done: false }]),
      "2 todo items left open: 3. c; 4. d",
    );
  });
});

describe("test-gate: the folder the agent sends (servers/test-gate/gates.ts)", () => {
  const root = mkdtempSync(join(tmpdir(), "sprout-gates-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const green = mkdtempSync(join(root, "green-"));
  const red = mkdtempSync(join(root, "red-"));
  writeFileSync(join(green, "ok.txt"), "ok");
  writeFileSync(join(red, "other.txt"), "x");
  const hookMeta = (session: string, cwd: string) => ({
    "sprout-agent/session": session,
    "sprout-agent/hook": { event: "Stop", cwd },
  });

  test("only an absolute cwd counts", () => {
    assert.equal(agentCwd(hookMeta("s", "/a/b")), "/a/b");
    assert.equal(agentCwd(hookMeta("s", "relative")), undefined);
    assert.equal(agentCwd({ "sprout-agent/hook": "nope" }), undefined);
    assert.equal(agentCwd(undefined), undefined);
  });

  test("a folder given by --cwd or TEST_GATE_CWD is kept; without one the gate follows the agent", () => {
    assert.equal(gateOptions({ cwd: "/x" }, {}).followAgentCwd, false);
    assert.equal(gateOptions({}, { TEST_GATE_CWD: "/x" }).followAgentCwd, false);
    assert.equal(gateOptions({}, {}).followAgentCwd, true);
    const fixed = new Gates({ command: "true", cwd: red, followAgentCwd: false });
    assert.equal(fixed.for(hookMeta("s", green)), fixed.for(undefined));
  });

  test("_Stop runs the suite in the agent's folder; run_tests of the same session follows it", async () => {
    // `test -f ok.txt` passes only in the green folder; the server itself is started in neither.
    const gates = new Gates({ command: "test -f ok.txt", cwd: root, followAgentCwd: true, stopWaitMs: 30_000 });
    const app = createApp({ gate: gates });
    const client = await httpClient("http://127.0.0.1/mcp", { fetch: appFetch(app) });
    try {
      const stop = async (session: string, cwd: string) =>
        resultText(await client.callTool({ name: "_Stop", arguments: {}, _meta: hookMeta(session, cwd) }));
      assert.equal(await stop("a", green), "");
      assert.match(await stop("b", red), /Reproduce with: test -f ok\.txt \(in .*red-/);
      const runTests = await client.callTool({
        name: "run_tests",
        arguments: {},
        _meta: { "sprout-agent/session": "a" },
      });
      assert.match(resultText(runTests), /pass/i);
      assert.notEqual(gates.for(hookMeta("a", green)), gates.for(hookMeta("b", red)));
    } finally {
      await client.close();
      gates.close();
    }
  });
});
