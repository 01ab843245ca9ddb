import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createRegistry, type RegistryOptions } from "../lib/mcp/registry.ts";
import type { McpServerConfig, ToolRegistry } from "../lib/mcp/types.ts";
import type { ToolDef } from "../lib/conversation/types.ts";
import {
  fakeConnect,
  FakeRpcError,
  FakeServer,
  httpConfig,
  sleep,
  stdioConfig,
  text,
} from "./helpers/fake-connection.ts";
import { startHttpFixture, tsServer } from "./fixtures/mcp/helpers.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";
import { alive, gone } from "./helpers/processes.ts";

const LEGAL = /^[a-zA-Z0-9_-]{1,64}$/;

interface Setup {
  registry: ToolRegistry;
  failures: { server: string; message: string }[];
  warnings: string[];
  clock: { now: number };
}

async function setup(
  servers: FakeServer[],
  options: Partial<RegistryOptions> & { configs?: McpServerConfig[] } = {},
): Promise<Setup> {
  const warnings: string[] = [];
  const clock = { now: 1_000_000 };
  const { configs, ...rest } = options;
  const { registry, failures } = await createRegistry(configs ?? servers.map((s) => stdioConfig(s.name)), {
    sessionId: "test-session",
    initTimeoutMs: 2000,
    connect: fakeConnect(servers),
    onWarning: (m) => warnings.push(m),
    now: () => clock.now,
    random: () => 0.5,
    ...rest,
  });
  return { registry, failures, warnings, clock };
}

function names(defs: ToolDef[]): string[] {
  return defs.map((d) => d.name);
}

function outText(outcome: { content: { type: string; text?: string }[] }): string {
  return outcome.content.map((b) => b.text ?? "").join("\n");
}

const call = { timeoutMs: 5000 };

describe("registry: names (SPEC 5)", () => {
  test("qualified names are <server>__<bare> in configuration order", async () => {
    const { registry } = await setup([new FakeServer("a", ["one", "two"]), new FakeServer("b", ["three"])]);
    try {
      assert.deepEqual(names(await registry.listTools()), ["a__one", "a__two", "b__three"]);
    } finally {
      await registry.close();
    }
  });

  test("C13 illegal names map to distinct legal names, stable across rounds and restarts, called by exact bare name", async () => {
    const long = "x".repeat(70);
    const fs = new FakeServer("fs", ["fs.read/file", "fs_read_file", long]);
    const { registry, clock } = await setup([fs]);
    try {
      const first = names(await registry.listTools());
      assert.equal(first.length, 3);
      for (const n of first) assert.match(n, LEGAL);
      assert.equal(new Set(first).size, 3);
      assert.equal(first[1], "fs__fs_read_file");
      assert.deepEqual(names(await registry.listTools()), first);

      const outcome = await registry.callTool(first[0]!, { path: "/x" }, call);
      assert.equal(outcome.isError, false);
      assert.equal(fs.calls.at(-1)?.tool, "fs.read/file");
      assert.deepEqual(fs.calls.at(-1)?.args, { path: "/x" });
      await registry.callTool(first[2]!, {}, call);
      assert.equal(fs.calls.at(-1)?.tool, long);

      // After a restart, with the list in another order, the names are the same.
      fs.die(1);
      fs.tools.reverse();
      clock.now += 10_000;
      await registry.callTool(first[1]!, {}, call);
      assert.equal(fs.connections.length, 2);
      assert.deepEqual(new Set(names(await registry.listTools())), new Set(first));
      assert.equal(registry.qualifiedName("fs", "fs.read/file"), first[0]);
    } finally {
      await registry.close();
    }
  });

  test("the same bare name on two servers routes each call to its own server", async () => {
    const a = new FakeServer("a", ["search"], { search: () => text("from a") });
    const b = new FakeServer("b", ["search"], { search: () => text("from b") });
    const { registry } = await setup([a, b]);
    try {
      assert.deepEqual(names(await registry.listTools()), ["a__search", "b__search"]);
      assert.equal(outText(await registry.callTool("b__search", {}, call)), "from b");
      assert.equal(outText(await registry.callTool("a__search", {}, call)), "from a");
      assert.equal(a.calls.length, 1);
      assert.equal(b.calls.length, 1);
    } finally {
      await registry.close();
    }
  });

  test("hooks and reserved _names are hidden and rejected as unknown tools without contacting the server", async () => {
    const s = new FakeServer("s", ["work", "_Stop", "_PostCompact", "_private"]);
    const { registry } = await setup([s]);
    try {
      assert.deepEqual(names(await registry.listTools()), ["s__work"]);
      for (const name of ["s___Stop", "s___private", "nope", "s__missing"]) {
        const outcome = await registry.callTool(name, {}, call);
        assert.deepEqual(outcome, { content: [{ type: "text", text: `unknown tool: ${name}` }], isError: true });
      }
      assert.equal(s.calls.length, 0);
      assert.deepEqual(registry.hookServers("_Stop"), ["s"]);
      assert.equal(registry.qualifiedName("s", "_Stop"), "s___Stop");
    } finally {
      await registry.close();
    }
  });
});

describe("registry: limits and schemas (SPEC 5.4)", () => {
  test("more than 16 servers: the extras are failures naming them, the first 16 start", async () => {
    const servers = Array.from({ length: 18 }, (_, i) => new FakeServer(`s${i}`, ["t"]));
    const { registry, failures } = await setup(servers);
    try {
      assert.deepEqual(failures.map((f) => f.server), ["s16", "s17"]);
      assert.match(failures[0]!.message, /^Cannot start server "s16": at most 16 MCP servers/);
      assert.equal((await registry.listTools()).length, 16);
      assert.equal(servers[16]!.connections.length, 0);
    } finally {
      await registry.close();
    }
  });

  test("more than 128 tools: the first 128 in configuration order are kept, a warning names the rest", async () => {
    const a = new FakeServer("a", Array.from({ length: 100 }, (_, i) => `t${i}`));
    const b = new FakeServer("b", ["_Stop", ...Array.from({ length: 40 }, (_, i) => `u${i}`)]);
    const { registry, warnings } = await setup([a, b]);
    try {
      const defs = await registry.listTools();
      assert.equal(defs.length, 128);
      assert.equal(defs[127]!.name, "b__u27");
      const warning = warnings.find((w) => w.startsWith("Too many tools"));
      assert.ok(warning);
      assert.match(warning, /dropped 12: b__u28, .*b__u39$/);
      assert.equal((await registry.callTool("b__u30", {}, call)).isError, true);
      await registry.listTools();
      assert.equal(warnings.filter((w) => w.startsWith("Too many tools")).length, 1, "warned once");
    } finally {
      await registry.close();
    }
  });

  test("descriptions are clamped to 1024 bytes without splitting a character", async () => {
    const s = new FakeServer("s", [{ name: "t", description: "é".repeat(1500) }, { name: "u", title: "Title" }]);
    const { registry } = await setup([s]);
    try {
      const [t, u] = await registry.listTools();
      const bytes = new TextEncoder().encode(t!.description).length;
      assert.ok(bytes <= 1024, `${bytes} bytes`);
      assert.ok(bytes > 1000);
      assert.ok(!t!.description.includes("\uFFFD"));
      assert.equal(u!.description, "Title");
    } finally {
      await registry.close();
    }
  });

  test("C15 a top-level anyOf schema is rewritten to an object schema; good and other servers are unaffected", async () => {
    const s = new FakeServer("s", [
      { name: "good", inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } },
      {
        name: "bad",
        inputSchema: {
          anyOf: [
            { type: "object", properties: { id: { type: "string" }, x: { type: "number" } }, required: ["id", "x"] },
            { type: "object", properties: { id: { type: "string" }, name: { type: "string" } }, required: ["id"] },
          ],
        },
      },
      { name: "none" },
      { name: "notype", inputSchema: { properties: { a: { type: "string" } } } },
      { name: "scalar", inputSchema: { type: "string" } },
      { name: "mixed", inputSchema: { oneOf: [{ type: "object" }, { type: "string" }] } },
      {
        name: "all",
        inputSchema: { allOf: [{ type: "object", required: ["a"] }, { properties: { b: {} }, required: ["b"] }] },
      },
      {
        name: "either",
        inputSchema: {
          type: "object",
          properties: { a: {}, b: {} },
          oneOf: [{ required: ["a"] }, { required: ["b"] }],
        },
      },
    ]);
    const other = new FakeServer("other", ["fine"]);
    const { registry, warnings } = await setup([s, other]);
    try {
      const defs = await registry.listTools();
      assert.deepEqual(names(defs), [
        "s__good",
        "s__bad",
        "s__none",
        "s__notype",
        "s__all",
        "s__either",
        "other__fine",
      ]);
      for (const d of defs) {
        assert.equal(d.inputSchema.type, "object");
        for (const key of ["anyOf", "oneOf", "allOf"]) assert.ok(!(key in d.inputSchema), `${d.name} ${key}`);
      }
      const bad = defs[1]!.inputSchema;
      assert.deepEqual(Object.keys(bad.properties as object), ["id", "x", "name"]);
      assert.deepEqual(bad.required, ["id"]);
      assert.deepEqual(defs[2]!.inputSchema, { type: "object", properties: {} });
      assert.deepEqual(defs[4]!.inputSchema.required, ["a", "b"]);
      assert.deepEqual(defs[5]!.inputSchema, { type: "object", properties: { a: {}, b: {} } });
      assert.ok(warnings.some((w) => w.includes('"scalar"') && w.includes('server "s"')));
      assert.ok(warnings.some((w) => w.includes('"mixed"')));
      assert.equal((await registry.callTool("s__good", { q: "x" }, call)).isError, false);
      assert.equal((await registry.callTool("s__bad", { id: "1" }, call)).isError, false);
      assert.equal(outText(await registry.callTool("s__scalar", {}, call)), "unknown tool: s__scalar");
    } finally {
      await registry.close();
    }
  });
});

describe("registry: results and failures as data (SPEC 6.7, 6.8)", () => {
  test("content blocks map to text, image and markers; empty content stays empty", async () => {
    const s = new FakeServer("s", ["mix", "empty", "err"], {
      mix: () => ({
        content: [
          { type: "text", text: "hello" },
          { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
          { type: "audio", data: "AAAAAAAA", mimeType: "audio/wav" },
          { type: "resource_link", uri: "file:///a.txt", name: "a" },
          { type: "resource", resource: { uri: "file:///b.txt", text: "inside b" } },
          { type: "resource", resource: { uri: "file:///c.bin", blob: "AAAA" } },
        ],
      }),
      empty: () => ({ content: [] }),
      err: () => text("permission denied: /etc/shadow", true),
    });
    const { registry } = await setup([s]);
    try {
      assert.deepEqual(await registry.callTool("s__mix", {}, call), {
        content: [
          { type: "text", text: "hello" },
          { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
          { type: "text", text: "[audio: audio/wav, 6 bytes]" },
          { type: "text", text: "[resource: file:///a.txt]" },
          { type: "text", text: "inside b" },
          { type: "text", text: "[resource: file:///c.bin]" },
        ],
        isError: false,
      });
      assert.deepEqual(await registry.callTool("s__empty", {}, call), { content: [], isError: false });
      assert.deepEqual(await registry.callTool("s__err", {}, call), {
        content: [{ type: "text", text: "permission denied: /etc/shadow" }],
        isError: true,
      });
    } finally {
      await registry.close();
    }
  });

  test("a JSON-RPC error is an error outcome naming the server; the server stays up", async () => {
    const s = new FakeServer("s", ["boom", "ok"], {
      boom: () => {
        throw new FakeRpcError(-32603, "internal failure");
      },
    });
    const { registry } = await setup([s]);
    try {
      const outcome = await registry.callTool("s__boom", {}, call);
      assert.equal(outcome.isError, true);
      assert.match(outText(outcome), /^Tool call rejected by server "s": internal failure/);
      assert.equal((await registry.callTool("s__ok", {}, call)).isError, false);
      assert.equal(s.connections.length, 1);
    } finally {
      await registry.close();
    }
  });

  test("a server exiting mid-call fails the call at once with its exit code and stderr tail, then fails fast", async () => {
    const s = new FakeServer("s", ["die", "ok"], {
      die: (_args, ctx) => {
        setTimeout(() => ctx.die(1, "fatal: out of cheese\n"), 20);
        return new Promise(() => {});
      },
    });
    const other = new FakeServer("other", ["ok"]);
    const { registry, warnings } = await setup([s, other]);
    try {
      const started = performance.now();
      const outcome = await registry.callTool("s__die", {}, { timeoutMs: 60_000 });
      assert.ok(performance.now() - started < 1000);
      assert.equal(outcome.isError, true);
      assert.match(
        outText(outcome),
        /^Server "s" exited during tool "s__die" \(exit code 1\); stderr:\nfatal: out of cheese/,
      );
      assert.ok(warnings.some((w) => w.startsWith('Server "s" exited (exit code 1)') && w.includes("out of cheese")));
      const fast = performance.now();
      const second = await registry.callTool("s__ok", {}, call);
      assert.ok(performance.now() - fast < 100);
      assert.match(
        outText(second),
        /^Server "s" is not running: exited \(exit code 1\); next restart attempt in 0\.5 s$/,
      );
      assert.equal((await registry.callTool("other__ok", {}, call)).isError, false);
      assert.deepEqual(registry.hookServers("ok"), ["other"]);
    } finally {
      await registry.close();
    }
  });

  test("a tool timeout is an error outcome and kills a stdio server, which restarts lazily", async () => {
    const s = new FakeServer("s", ["slow", "ok"], {
      slow: (_a, ctx) => sleep(5000, ctx.signal).then(() => text("late")),
    });
    const { registry, clock } = await setup([s]);
    try {
      const outcome = await registry.callTool("s__slow", {}, { timeoutMs: 200 });
      assert.equal(outcome.isError, true);
      assert.match(outText(outcome), /^Tool "s__slow" timed out after 0\.2 s; server "s" was stopped/);
      assert.equal(s.connections[0]!.killed, true);
      assert.deepEqual(registry.hookServers("ok"), []);
      clock.now += 600;
      assert.equal(outText(await registry.callTool("s__ok", {}, call)), "ok ok");
      assert.equal(s.connections.length, 2);
      assert.deepEqual(registry.hookServers("ok"), ["s"]);
    } finally {
      await registry.close();
    }
  });

  test("a tool timeout on an HTTP server does not kill it", async () => {
    const s = new FakeServer("h", ["slow"], { slow: (_a, ctx) => sleep(5000, ctx.signal).then(() => text("late")) });
    const { registry } = await setup([s], { configs: [httpConfig("h")] });
    try {
      const outcome = await registry.callTool("h__slow", {}, { timeoutMs: 100 });
      assert.equal(outText(outcome), 'Tool "h__slow" timed out after 0.1 s');
      assert.equal(s.connections[0]!.killed, false);
      assert.deepEqual(registry.hookServers("slow"), ["h"]);
    } finally {
      await registry.close();
    }
  });

  test("an aborted call rejects with an AbortError", async () => {
    const s = new FakeServer("s", ["slow"], { slow: (_a, ctx) => sleep(5000, ctx.signal).then(() => text("late")) });
    const { registry } = await setup([s]);
    try {
      const controller = new AbortController();
      const pending = registry.callTool("s__slow", {}, { timeoutMs: 10_000, signal: controller.signal });
      setTimeout(() => controller.abort(), 30);
      await assert.rejects(pending, (e: Error) => e.name === "AbortError");
      assert.equal(s.calls[0]!.end, "aborted");
    } finally {
      await registry.close();
    }
  });
});

describe("registry: start, list changes, restart (SPEC 6.3, 6.10)", () => {
  test("the signal aborts starting while a server lists its tools: killed at once, a failure", async () => {
    const slow = new FakeServer("slow", ["t"]);
    slow.listDelayMs = 30_000;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const { registry, failures } = await setup([slow, new FakeServer("good", ["t"])], { signal: controller.signal });
    try {
      assert.ok(Date.now() - started < 5000, "did not wait for the 30 s listing");
      assert.deepEqual(failures.map((f) => f.server), ["slow"]);
      assert.equal(slow.connections[0]?.killed, true);
      assert.deepEqual(names(await registry.listTools()), ["good__t"]);
    } finally {
      await registry.close();
    }
  });

  test("a server that cannot start is a failure naming it; the others work", async () => {
    const bad = new FakeServer("bad", ["t"]);
    bad.failConnects = 1;
    const slow = new FakeServer("slow", ["t"]);
    slow.connectDelayMs = 400;
    const { registry, failures } = await setup([bad, new FakeServer("good", ["t"]), slow], { initTimeoutMs: 150 });
    try {
      assert.deepEqual(failures.map((f) => f.server), ["bad", "slow"]);
      assert.equal(failures[0]!.message, 'Cannot start server "bad": command not found');
      assert.equal(failures[1]!.message, 'Cannot start server "slow": connecting timed out after 0.2 s');
      assert.deepEqual(names(await registry.listTools()), ["good__t"]);
      await sleep(400);
      assert.equal(slow.connections[0]?.killed, true, "the late connection is killed");
    } finally {
      await registry.close();
    }
  });

  test("C12 tools/list_changed re-lists the server before the next round: new tools appear, removed ones are unknown, a new _Stop is a hook", async () => {
    const s = new FakeServer("s", ["search"]);
    s.handlers.search = () => {
      setTimeout(() => s.setTools(["summarize", "_Stop"]), 0);
      return text("found");
    };
    const { registry } = await setup([s]);
    try {
      assert.deepEqual(names(await registry.listTools()), ["s__search"]);
      assert.deepEqual(registry.hookServers("_Stop"), []);
      await registry.callTool("s__search", {}, call);
      await sleep(10);
      assert.deepEqual(names(await registry.listTools()), ["s__summarize"]);
      assert.deepEqual(registry.hookServers("_Stop"), ["s"]);
      assert.equal(outText(await registry.callTool("s__search", {}, call)), "unknown tool: s__search");
      assert.equal(s.listCount, 2);
      await registry.listTools();
      assert.equal(s.listCount, 2, "no re-list without a change");
    } finally {
      await registry.close();
    }
  });

  test("restart waits for the backoff, fails fast before it, and lists the restarted server's tools", async () => {
    const s = new FakeServer("s", ["a", "_Stop"]);
    const { registry, clock } = await setup([s]);
    try {
      s.die(2, "bye");
      assert.deepEqual(registry.hookServers("_Stop"), []);
      await assert.rejects(
        registry.callHook("s", "_Stop", { timeoutMs: 1000, meta: {} }),
        /Server "s" is not running/,
      );
      assert.equal(s.connections.length, 1, "hook calls never restart");
      assert.deepEqual(names(await registry.listTools()), ["s__a"], "a dead server keeps its tools until it gives up");
      clock.now += 300;
      assert.match(outText(await registry.callTool("s__a", {}, call)), /not running: .*next restart attempt in 0\.2 s/);
      assert.equal(s.connections.length, 1);
      s.tools = [{ name: "a" }, { name: "b" }];
      clock.now += 300;
      assert.equal((await registry.callTool("s__a", {}, call)).isError, false);
      assert.equal(s.connections.length, 2);
      assert.deepEqual(names(await registry.listTools()), ["s__a", "s__b"]);
      assert.deepEqual(registry.hookServers("_Stop"), []);
    } finally {
      await registry.close();
    }
  });

  test("backoff doubles per failed attempt with jitter, and after 3 failed attempts the tools disappear", async () => {
    const s = new FakeServer("s", ["a"]);
    let jitter = 0.5;
    const { registry, clock, warnings } = await setup([s, new FakeServer("t", ["x"])], { random: () => jitter });
    try {
      s.die(1);
      s.failConnects = 3;
      clock.now += 500; // backoff(1) = 500 ms × (0.8 + 0.4 × 0.5)
      assert.match(outText(await registry.callTool("s__a", {}, call)), /Cannot restart|not running/);
      assert.equal(s.failConnects, 2);
      // backoff(2) = 1000 ms with jitter 0.5
      clock.now += 900;
      assert.match(outText(await registry.callTool("s__a", {}, call)), /next restart attempt in 0\.1 s/);
      assert.equal(s.failConnects, 2);
      jitter = 0;
      clock.now += 100;
      await registry.callTool("s__a", {}, call);
      assert.equal(s.failConnects, 1);
      // backoff(3) = 2000 ms × 0.8 with jitter 0
      clock.now += 1500;
      assert.match(outText(await registry.callTool("s__a", {}, call)), /next restart attempt in 0\.1 s/);
      clock.now += 100;
      const last = await registry.callTool("s__a", {}, call);
      assert.equal(s.failConnects, 0);
      assert.match(outText(last), /gave up after 3 failed restarts/);
      assert.ok(warnings.some((w) => w.includes("failed to restart 3 times")));
      assert.deepEqual(names(await registry.listTools()), ["t__x"]);
      assert.equal(outText(await registry.callTool("s__a", {}, call)), "unknown tool: s__a");
    } finally {
      await registry.close();
    }
  });

  test("concurrent calls to a dead server share one restart", async () => {
    const s = new FakeServer("s", ["a"]);
    s.connectDelayMs = 0;
    const { registry, clock } = await setup([s]);
    try {
      s.die(1);
      s.connectDelayMs = 50;
      clock.now += 1000;
      const outcomes = await Promise.all([1, 2, 3].map(() => registry.callTool("s__a", {}, call)));
      assert.deepEqual(outcomes.map((o) => o.isError), [false, false, false]);
      assert.equal(s.connections.length, 2);
    } finally {
      await registry.close();
    }
  });

  test("callHook sends the meta, killServer kills at once, close closes every connection", async () => {
    const a = new FakeServer("a", ["_Stop", "t"], { _Stop: () => text("") });
    const b = new FakeServer("b", ["t"]);
    const { registry, warnings } = await setup([a, b]);
    await registry.callHook("a", "_Stop", { timeoutMs: 1000, meta: { "sprout-agent/hook": { event: "Stop" } } });
    assert.deepEqual(a.calls[0]!.meta, { "sprout-agent/hook": { event: "Stop" } });
    assert.deepEqual(a.calls[0]!.args, {});
    await assert.rejects(registry.callHook("b", "_Stop", { timeoutMs: 1000, meta: {} }), /does not list hook "_Stop"/);
    registry.killServer("a", "testing");
    assert.equal(a.connections[0]!.killed, true);
    assert.ok(warnings.includes('Killed server "a": testing'));
    assert.deepEqual(registry.hookServers("_Stop"), []);
    await registry.close();
    assert.equal(b.connections[0]!.closed, true);
    assert.deepEqual(await registry.listTools(), []);
  });
});

function fixture(name: string, mode: string, extra: string[] = []): McpServerConfig {
  const [command, ...args] = tsCommand(`${repoRoot}tests/fixtures/registry/server.ts`);
  return { name, transport: { type: "stdio", command: command!, args: [...args, "--mode", mode, ...extra], env: {} } };
}

async function realRegistry(configs: McpServerConfig[], extra: Partial<RegistryOptions> = {}) {
  const warnings: string[] = [];
  const { registry, failures } = await createRegistry(configs, {
    sessionId: "real",
    env: process.env,
    initTimeoutMs: 20_000,
    onWarning: (m) => warnings.push(m),
    ...extra,
  });
  assert.deepEqual(failures, []);
  return { registry, warnings };
}

describe("registry against real SDK stdio servers", () => {
  test("C13 C15 real server: legal distinct stable names, exact bare name on tools/call, anyOf schema rewritten", async () => {
    const { registry } = await realRegistry([fixture("fs", "names")]);
    try {
      const defs = await registry.listTools();
      const list = names(defs);
      assert.equal(list.length, 5);
      for (const n of list) assert.match(n, LEGAL);
      assert.equal(new Set(list).size, 5);
      assert.deepEqual(names(await registry.listTools()), list);
      const dotted = registry.qualifiedName("fs", "fs.read/file");
      assert.equal(list[0], dotted);
      assert.equal(outText(await registry.callTool(dotted, { p: 1 }, call)), 'called fs.read/file {"p":1}');
      assert.equal(outText(await registry.callTool(list[2]!, {}, call)), `called ${"x".repeat(70)} {}`);
      const bad = defs.find((d) => d.name === "fs__bad")!;
      assert.deepEqual(bad.inputSchema, {
        type: "object",
        properties: { a: { type: "string" }, b: { type: "number" } },
      });
      assert.equal(outText(await registry.callTool("fs__good", { q: "x" }, call)), 'called good {"q":"x"}');
    } finally {
      await registry.close();
    }
  });

  test("C12 real server: after tools/list_changed the next list has summarize, not search; search is unknown; _Stop is a hook", async () => {
    const { registry } = await realRegistry([fixture("s", "changes")]);
    try {
      assert.deepEqual(names(await registry.listTools()), ["s__search"]);
      assert.equal(outText(await registry.callTool("s__search", {}, call)), "found");
      let list: string[] = [];
      for (let i = 0; i < 100 && !list.includes("s__summarize"); i++) {
        await sleep(20);
        list = names(await registry.listTools());
      }
      assert.deepEqual(list, ["s__summarize"]);
      assert.deepEqual(registry.hookServers("_Stop"), ["s"]);
      assert.equal(outText(await registry.callTool("s__search", {}, call)), "unknown tool: s__search");
      const stop = await registry.callHook("s", "_Stop", { timeoutMs: 5000, meta: {} });
      assert.deepEqual(stop.content, [{ type: "text", text: "objection from changes" }]);
    } finally {
      await registry.close();
    }
  });

  test("C08 real server exiting mid-call fails within 1 s with exit code and stderr, fails fast, then restarts as a new process", async () => {
    const { registry, warnings } = await realRegistry([fixture("life", "life")], { restartBaseMs: 300 });
    try {
      const pid1 = Number(outText(await registry.callTool("life__pid", {}, call)));
      const started = performance.now();
      const outcome = await registry.callTool("life__die", {}, { timeoutMs: 60_000 });
      assert.ok(performance.now() - started < 1000, `${performance.now() - started} ms`);
      assert.equal(outcome.isError, true);
      assert.match(outText(outcome), /^Server "life" exited during tool "life__die" \(exit code 1\)/);
      assert.match(outText(outcome), /the fixture was told to die/);
      assert.ok(warnings.some((w) => w.includes('Server "life" exited') && w.includes("told to die")));
      const fast = performance.now();
      assert.match(outText(await registry.callTool("life__pid", {}, call)), /^Server "life" is not running/);
      assert.ok(performance.now() - fast < 100);
      await sleep(450);
      const pid2 = Number(outText(await registry.callTool("life__pid", {}, call)));
      assert.ok(pid2 > 0 && pid2 !== pid1);
      assert.equal(alive(pid1), false);
    } finally {
      await registry.close();
    }
  });

  test("a tool timeout kills the real stdio server's process at once", async () => {
    const { registry } = await realRegistry([fixture("life", "life")]);
    try {
      const pid = Number(outText(await registry.callTool("life__pid", {}, call)));
      const outcome = await registry.callTool("life__sleep", {}, { timeoutMs: 300 });
      assert.match(outText(outcome), /^Tool "life__sleep" timed out after 0\.3 s/);
      assert.ok(await gone(pid, 1000), "the process is gone");
    } finally {
      await registry.close();
    }
  });

  test("close leaves no server process behind", async () => {
    const { registry } = await realRegistry([fixture("a", "life"), fixture("b", "life")]);
    const pids = await Promise.all(
      ["a__pid", "b__pid"].map(async (n) => Number(outText(await registry.callTool(n, {}, call)))),
    );
    await registry.close();
    for (const pid of pids) assert.ok(await gone(pid, 2000), `pid ${pid}`);
  });
});

describe("registry: tools/list is sent once at start (issue 9)", () => {
  /** Starts the registry on `config`, runs two rounds' worth of listTools, and returns the methods the server got. */
  async function rounds(
    config: McpServerConfig,
    methods: () => string[],
    fetchLike?: typeof fetch,
  ): Promise<[string[], string[]]> {
    const options: RegistryOptions = { sessionId: "once", env: process.env, initTimeoutMs: 20_000 };
    if (fetchLike) options.fetch = fetchLike;
    const { registry, failures } = await createRegistry([config], options);
    try {
      assert.deepEqual(failures, []);
      const atStart = methods();
      assert.deepEqual(names(await registry.listTools()).slice(0, 2), ["s__echo", "s__add"]);
      return [atStart, methods()];
    } finally {
      await registry.close();
    }
  }

  const tools = (list: string[]) => list.filter((m) => m === "tools/list").length;

  for (
    const [label, file, args, era] of [
      ["SDK 2.x (modern)", "sdk2-stdio.ts", [], "modern"],
      ["SDK 2.x legacy-only", "sdk2-stdio.ts", ["--legacy-only"], "legacy"],
      ["SDK 1.x (legacy)", "sdk1-stdio.ts", [], "legacy"],
    ] as const
  ) {
    test(`stdio, ${label}: one tools/list for the start and the first round`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "sprout-once-"));
      const log = join(dir, "in.jsonl");
      writeFileSync(log, "");
      try {
        // Every line the agent writes to the real server is copied to `log`.
        const inner = tsServer("s", file, "bun", [...args]).transport as { command: string; args: string[] };
        const argv = [inner.command, ...inner.args].map((a) => `'${a}'`).join(" ");
        const config: McpServerConfig = {
          name: "s",
          transport: { type: "stdio", command: "sh", args: ["-c", `tee -a '${log}' | exec ${argv}`], env: {} },
        };
        const methods = () =>
          readFileSync(log, "utf8").split("\n").filter((l) => l !== "").map((l) => String(JSON.parse(l).method));
        const [atStart, afterRound] = await rounds(config, methods);
        assert.equal(atStart.includes("initialize"), era === "legacy", atStart.join(", "));
        assert.equal(tools(atStart), 1, atStart.join(", "));
        assert.equal(tools(afterRound), 1, afterRound.join(", "));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  for (
    const [label, file, era] of [["SDK 2.x (modern)", "sdk2-http.ts", "modern"], [
      "SDK 1.x (legacy)",
      "sdk1-http.ts",
      "legacy",
    ]] as const
  ) {
    test(`Streamable HTTP, ${label}: one tools/list for the start and the first round`, async () => {
      const fixture = await startHttpFixture(file, "bun");
      const posted: string[] = [];
      const counting: typeof fetch = (url, init) => {
        if (typeof init?.body === "string") posted.push(String(JSON.parse(init.body).method));
        return fetch(url, init);
      };
      try {
        const [atStart, afterRound] = await rounds(
          { name: "s", transport: { type: "http", url: fixture.url, headers: {} } },
          () => [...posted],
          counting,
        );
        assert.equal(atStart.includes("initialize"), era === "legacy", atStart.join(", "));
        assert.equal(tools(atStart), 1, atStart.join(", "));
        assert.equal(tools(afterRound), 1, afterRound.join(", "));
      } finally {
        await fixture.stop();
      }
    });
  }
});

describe("registry: task-based tools (MCP 2025-11-25 execution.taskSupport)", () => {
  test('a tool that requires task-based execution is offered and runs as a task; "optional" and plain tools as before', async () => {
    const { registry, warnings } = await realRegistry([{ ...tsServer("t", "sdk1-tasks.ts", "bun"), name: "t" }]);
    try {
      assert.deepEqual(names(await registry.listTools()), [
        "t__echo",
        "t__render",
        "t__convert",
        "t__steps",
        "t__forever",
      ]);
      assert.deepEqual(warnings, []);
      assert.equal(outText(await registry.callTool("t__render", { text: "a" }, call)), "render: a");
      assert.equal(outText(await registry.callTool("t__convert", { text: "a" }, call)), "convert: a");
    } finally {
      await registry.close();
    }
  });
});
