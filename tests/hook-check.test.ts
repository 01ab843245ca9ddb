import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createAgent } from "../lib/agent/agent.ts";
import { parseHookServers } from "../lib/config/config.ts";
import { checkHooks, hookSetupWarnings, schemaProblem } from "../lib/hooks/check.ts";
import { HOOK_POINTS } from "../lib/hooks/points.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { McpTool } from "../lib/mcp/types.ts";
import { fakeConnect, FakeServer, sleep, stdioConfig, text } from "./helpers/fake-connection.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

const tools = (...names: string[]): McpTool[] => names.map((name) => ({ name, inputSchema: { type: "object" } }));

describe("start-up warnings about MCP_HOOK_SERVERS", () => {
  test("a name no configured server has is one warning that lists the configured names", () => {
    const warnings = hookSetupWarnings({
      configured: ["todo", "fs"],
      allow: parseHookServers("todoo,gate"),
      listed: [],
    });
    assert.deepEqual(warnings, [
      'MCP_HOOK_SERVERS names servers "todoo", "gate", which are not configured (configured: "todo", "fs")',
    ]);
  });

  test("servers listing hooks the allowlist leaves off are one warning naming them and their hooks", () => {
    const listed = [
      { server: "todo", tools: tools("_Stop", "_PostCompact") },
      { server: "fs", tools: [] },
      { server: "odd", tools: tools("_Private") }, // no hook point: nothing to enable
      { server: "gate", tools: tools("_Stop") },
    ];
    assert.deepEqual(
      hookSetupWarnings({ configured: ["todo", "fs", "odd", "gate"], allow: parseHookServers(""), listed }),
      [
        'Hooks not enabled: servers "todo" (_Stop, _PostCompact), "gate" (_Stop); MCP_HOOK_SERVERS (now unset) must name them for the hooks to run',
      ],
    );
    assert.deepEqual(
      hookSetupWarnings({ configured: ["todo", "fs", "odd", "gate"], allow: parseHookServers("todo"), listed }),
      ['Hooks not enabled: server "gate" (_Stop); MCP_HOOK_SERVERS (now "todo") must name it for the hooks to run'],
    );
  });

  test("no warning when every hook is enabled and every name is configured", () => {
    const listed = [{ server: "todo", tools: tools("_Stop") }];
    assert.deepEqual(hookSetupWarnings({ configured: ["todo"], allow: parseHookServers("*"), listed }), []);
    assert.deepEqual(hookSetupWarnings({ configured: ["todo"], allow: parseHookServers("todo"), listed }), []);
  });

  test("createAgent says both through onWarning, once each, naming a real server's hooks", async () => {
    const [command = "", ...args] = tsCommand(`${repoRoot}servers/todo-enforcer/stdio.ts`);
    const warnings: string[] = [];
    const agent = await createAgent({
      model: { provider: "scripted", turns: [] },
      mcpServers: { mcpServers: { todo: { command, args } } },
      hookServers: ["todoo"],
      onWarning: (message) => warnings.push(message),
    });
    await agent.close();
    assert.deepEqual(agent.failures, []);
    assert.deepEqual(warnings, [
      'MCP_HOOK_SERVERS names server "todoo", which is not configured (configured: "todo")',
      'Hooks not enabled: server "todo" (_Stop, _PostCompact, _SessionStart, _SessionEnd); MCP_HOOK_SERVERS (now "todoo") must name it for the hooks to run',
    ]);
  });
});

describe("hook input schemas", () => {
  test("a hook is called with {}: required arguments or a non-object schema break the contract", () => {
    assert.equal(schemaProblem({ type: "object" }), undefined);
    assert.equal(schemaProblem({ type: "object", properties: { a: { type: "string" } } }), undefined);
    assert.equal(schemaProblem(undefined), undefined);
    assert.equal(
      schemaProblem({ type: "object", required: ["path"] }),
      'its input schema requires arguments: "path" (hooks are called with {})',
    );
    assert.equal(schemaProblem({ type: "string" }), 'its input schema has type "string", not "object"');
    assert.equal(schemaProblem("x"), "its input schema is not a JSON Schema object");
  });
});

describe("the dry run of cli.ts hooks (checkHooks)", () => {
  test("each enabled hook point is called once with dryRun in its _meta; others are listed, not called", async () => {
    const hello = new FakeServer("hello", ["_Stop", "_Secret"], { _Stop: () => text("still open") });
    const off = new FakeServer("off", ["_Stop"], { _Stop: () => text("") });
    const { registry, failures } = await createRegistry([stdioConfig("hello"), stdioConfig("off")], {
      sessionId: "s",
      connect: fakeConnect([hello, off]),
    });
    try {
      const report = await checkHooks(registry, {
        configured: ["hello", "off", "gone"],
        failures: [...failures, {
          server: "gone",
          message: 'Cannot start server "gone": command "x" not found on PATH',
        }],
        allow: parseHookServers("hello"),
        timeoutMs: 1000,
        maxRejections: 3,
      });
      assert.deepEqual(report.map((s) => [s.server, s.enabled, s.error]), [
        ["hello", true, undefined],
        ["off", false, undefined],
        ["gone", false, 'Cannot start server "gone": command "x" not found on PATH'],
      ]);
      const [stop, secret] = report[0]!.hooks;
      assert.deepEqual({ ...stop, durationMs: 0 }, {
        name: "_Stop",
        point: true,
        enabled: true,
        outcome: "objection",
        text: "still open",
        durationMs: 0,
        problems: [],
      });
      assert.deepEqual(secret, { name: "_Secret", point: false, enabled: false, problems: [] });
      assert.deepEqual(report[1]!.hooks, [{ name: "_Stop", point: true, enabled: false, problems: [] }]);
      assert.deepEqual(hello.calls.map((c) => [c.tool, c.args, c.meta?.["sprout-agent/hook"]]), [
        ["_Stop", {}, { event: "Stop", round: 1, rejectionsUsed: 0, rejectionsLeft: 3, dryRun: true }],
      ]);
      assert.deepEqual(off.calls, []);
    } finally {
      await registry.close();
    }
  });

  test("isError, only whitespace, non-text content, a timeout and required arguments are problems", async () => {
    const bad = new FakeServer(
      "bad",
      [
        { name: "_Stop", inputSchema: { type: "object", required: ["path"] } },
        { name: "_PostCompact", inputSchema: { type: "object" } },
      ],
      { _Stop: () => text("boom", true), _PostCompact: () => sleep(300).then(() => text("late")) },
    );
    const blank = new FakeServer("blank", ["_Stop", "_PostCompact"], {
      _Stop: () => text("  \n"),
      _PostCompact: () => ({ content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }),
    });
    const { registry } = await createRegistry([stdioConfig("bad"), stdioConfig("blank")], {
      sessionId: "s",
      connect: fakeConnect([bad, blank]),
    });
    try {
      const report = await checkHooks(registry, {
        configured: ["bad", "blank"],
        failures: [],
        allow: parseHookServers("*"),
        timeoutMs: 100,
        maxRejections: 3,
      });
      const problems = report.map((s) => s.hooks.map((h) => [h.name, h.outcome, h.problems]));
      assert.deepEqual(problems, [
        [
          ["_Stop", "error", [
            'its input schema requires arguments: "path" (hooks are called with {})',
            "returned an error: boom",
          ]],
          ["_PostCompact", "timeout", ["it took longer than the 0.1 s hook timeout"]],
        ],
        [
          ["_Stop", "none", ["returned only whitespace"]],
          ["_PostCompact", "none", ["returned no text, only other content"]],
        ],
      ]);
    } finally {
      await registry.close();
    }
  });

  test("hooks left uncalled because two timeouts killed the server are problems that say so, not 'not enabled'", async () => {
    const slow = new FakeServer("slow", ["_Stop", "_PostCompact", "_SessionStart"], {
      _Stop: () => sleep(300).then(() => text("late")),
      _PostCompact: () => sleep(300).then(() => text("late")),
      _SessionStart: () => text("restored"),
    });
    const { registry } = await createRegistry([stdioConfig("slow")], {
      sessionId: "s",
      connect: fakeConnect([slow]),
    });
    try {
      const report = await checkHooks(registry, {
        configured: ["slow"],
        failures: [],
        allow: parseHookServers("slow"),
        timeoutMs: 100,
        maxRejections: 3,
      });
      assert.deepEqual(report[0]!.hooks.map((h) => [h.name, h.enabled, h.outcome, h.problems]), [
        ["_Stop", true, "timeout", ["it took longer than the 0.1 s hook timeout"]],
        ["_PostCompact", true, "timeout", ["it took longer than the 0.1 s hook timeout"]],
        ["_SessionStart", true, undefined, [
          "the server was killed after 2 hook timeouts in a row, as a running agent would kill it",
        ]],
      ]);
    } finally {
      await registry.close();
    }
  });

  test("every hook point of HOOK_POINTS is called, in the table's order", async () => {
    const names = Object.keys(HOOK_POINTS);
    const all = new FakeServer("all", names, Object.fromEntries(names.map((n) => [n, () => text("")])));
    const { registry } = await createRegistry([stdioConfig("all")], { sessionId: "s", connect: fakeConnect([all]) });
    try {
      const report = await checkHooks(registry, {
        configured: ["all"],
        failures: [],
        allow: parseHookServers("*"),
        timeoutMs: 1000,
        maxRejections: 3,
      });
      assert.deepEqual(all.calls.map((c) => c.tool), names);
      assert.ok(report[0]!.hooks.every((h) => h.outcome === "none" && h.problems.length === 0));
    } finally {
      await registry.close();
    }
  });
});
