/**
 * Tool-list changes in the modern era (SPEC section 10, CASES C12) against a real SDK 2.x
 * server (`tests/fixtures/mcp/sdk2-changes.ts`), over stdio and Streamable HTTP: the
 * `subscriptions/listen` stream carries `notifications/tools/list_changed`, and the `ttlMs`
 * freshness hint of `tools/list` decides when the registry lists a server again. The legacy
 * path (unsolicited `notifications/tools/list_changed`) is checked against the same server.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connectMcp } from "../lib/mcp/client.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { McpConnection, McpEra, McpServerConfig, ToolRegistry } from "../lib/mcp/types.ts";
import type { ToolDef } from "../lib/conversation/types.ts";
import { runtime } from "./helpers/runtime.ts";
import { fixtures, startHttpFixture, textOf, tsServer, waitFor } from "./fixtures/mcp/helpers.ts";
import type { HttpFixture } from "./fixtures/mcp/helpers.ts";

const FIXTURE = "sdk2-changes.ts";
const call = { timeoutMs: 20_000 };
const dir = mkdtempSync(join(tmpdir(), "list-changes-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function names(defs: ToolDef[]): string[] {
  return defs.map((d) => d.name);
}

function stdio(args: string[] = [], protocol?: McpEra): McpServerConfig {
  const config = tsServer("s", FIXTURE, runtime(), args);
  return protocol === undefined ? config : { ...config, protocol };
}

function http(url: string): McpServerConfig {
  return { name: "s", transport: { type: "http", url, headers: {} } };
}

async function withRegistry(
  config: McpServerConfig,
  body: (registry: ToolRegistry, era: () => McpEra | undefined, warnings: string[]) => Promise<void>,
): Promise<void> {
  const warnings: string[] = [];
  const eraCache = new Map<string, McpEra>();
  const { registry, failures } = await createRegistry([config], {
    sessionId: "list-changes",
    env: process.env,
    initTimeoutMs: 20_000,
    eraCache,
    onWarning: (m) => warnings.push(m),
  });
  try {
    assert.deepEqual(failures, []);
    await body(registry, () => eraCache.values().next().value, warnings);
  } finally {
    await registry.close();
  }
}

async function withHttp(args: string[], body: (fixture: HttpFixture) => Promise<void>): Promise<void> {
  const fixture = await startHttpFixture(FIXTURE, runtime(), ["--http", ...args]);
  try {
    await body(fixture);
  } finally {
    await fixture.stop();
  }
}

/** CASES C12 from the first call on: the list changed, `search` is gone, `_Stop` is a hook. */
async function expectChanged(registry: ToolRegistry): Promise<void> {
  assert.deepEqual(names(await registry.listTools()), ["s__summarize"]);
  assert.deepEqual(registry.hookServers("_Stop"), ["s"]);
  assert.equal(textOf(await registry.callTool("s__search", {}, call)), "unknown tool: s__search");
  assert.equal(textOf(await registry.callTool("s__summarize", {}, call)), "summary");
  const stop = await registry.callHook("s", "_Stop", { timeoutMs: 20_000, meta: {} });
  assert.equal(textOf(stop), "objection from changes");
}

async function callSearch(registry: ToolRegistry): Promise<void> {
  assert.deepEqual(names(await registry.listTools()), ["s__search"]);
  assert.deepEqual(registry.hookServers("_Stop"), []);
  assert.equal(textOf(await registry.callTool("s__search", {}, call)), "found");
}

/** The `Mcp-Method` of each request the HTTP fixture served, in order. */
function methods(log: string): string[] {
  try {
    return readFileSync(log, "utf8").split("\n").filter((l) => l !== "");
  } catch {
    return [];
  }
}

function count(list: string[], method: string): number {
  return list.filter((m) => m === method).length;
}

describe("modern-era tool-list changes over stdio (SDK 2.x serveStdio)", () => {
  test("C12 with the SDK's defaults (ttlMs 0, tools.listChanged): the next listTools shows summarize, not search or _Stop; _Stop is a hook; search is unknown", async () => {
    await withRegistry(stdio(), async (registry, era, warnings) => {
      assert.equal(era(), "modern");
      await callSearch(registry);
      await expectChanged(registry);
      assert.deepEqual(warnings, []);
    });
  });

  test("C12 with ttlMs 600000: the change notice on the subscriptions/listen stream alone makes the registry list again", async () => {
    await withRegistry(stdio(["--ttl-ms", "600000"]), async (registry, era, warnings) => {
      assert.equal(era(), "modern");
      await callSearch(registry);
      await expectChanged(registry);
      assert.deepEqual(warnings, []);
    });
  });

  test("a server that announces nothing: its list is kept while its ttlMs holds, and listed again once it has elapsed", async () => {
    await withRegistry(stdio(["--quiet", "--ttl-ms", "600000"]), async (registry) => {
      await callSearch(registry);
      // Fresh for 10 minutes: not listed again, so the change is not seen yet (allowed by the hint).
      assert.deepEqual(names(await registry.listTools()), ["s__search"]);
    });
    await withRegistry(stdio(["--quiet", "--ttl-ms", "300"]), async (registry, _era, warnings) => {
      await callSearch(registry);
      await new Promise((r) => setTimeout(r, 600));
      await expectChanged(registry);
      assert.deepEqual(warnings, []);
    });
  });

  test("legacy era (pinned) on the same server: the unsolicited notifications/tools/list_changed still re-lists it", async () => {
    await withRegistry(stdio([], "legacy"), async (registry) => {
      await callSearch(registry);
      let list: string[] = [];
      for (let i = 0; i < 100 && !list.includes("s__summarize"); i++) {
        await new Promise((r) => setTimeout(r, 20));
        list = names(await registry.listTools());
      }
      await expectChanged(registry);
    });
  });
});

describe("modern-era tool-list changes over Streamable HTTP (SDK 2.x createMcpHandler)", () => {
  test("C12 with ttlMs 600000: one subscriptions/listen stream; no tools/list while fresh; the notice on the stream makes the next listTools list again", async () => {
    const log = join(dir, "http-notice.log");
    await withHttp(["--ttl-ms", "600000", "--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry, era, warnings) => {
        assert.equal(era(), "modern");
        assert.deepEqual(names(await registry.listTools()), ["s__search"]);
        assert.deepEqual(names(await registry.listTools()), ["s__search"]);
        assert.equal(count(methods(log), "tools/list"), 1, methods(log).join(", "));
        assert.equal(count(methods(log), "subscriptions/listen"), 1, methods(log).join(", "));
        await callSearch(registry);
        // The notice travels on the listen stream, not in the call's answer: wait for it.
        let list: string[] = [];
        for (let i = 0; i < 100 && !list.includes("s__summarize"); i++) {
          list = names(await registry.listTools());
          if (!list.includes("s__summarize")) await new Promise((r) => setTimeout(r, 20));
        }
        await expectChanged(registry);
        assert.equal(count(methods(log), "tools/list"), 2, methods(log).join(", "));
        assert.deepEqual(warnings, []);
      });
    });
  });

  test("C12 with the SDK's defaults (ttlMs 0): the start's list serves the first listTools, every later one lists again, so the change shows at once", async () => {
    const log = join(dir, "http-default.log");
    await withHttp(["--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry, era, warnings) => {
        assert.equal(era(), "modern");
        await callSearch(registry);
        await expectChanged(registry);
        assert.equal(count(methods(log), "tools/list"), 2, methods(log).join(", "));
        assert.deepEqual(warnings, []);
      });
    });
  });

  test("a server that announces nothing: no listen stream; listed again only once its ttlMs has elapsed", async () => {
    const log = join(dir, "http-quiet.log");
    await withHttp(["--quiet", "--ttl-ms", "400", "--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry) => {
        await callSearch(registry);
        await new Promise((r) => setTimeout(r, 700));
        await expectChanged(registry);
        assert.equal(count(methods(log), "subscriptions/listen"), 0, methods(log).join(", "));
      });
    });
  });
});

/** Calls `registry.listTools()` `n` times, as `n` rounds do, and returns the last list's names. */
async function rounds(registry: ToolRegistry, n: number): Promise<string[]> {
  let list: string[] = [];
  for (let i = 0; i < n; i++) list = names(await registry.listTools());
  return list;
}

/** Lists again until `name` shows (a notice on the listen stream arrives on its own time). */
async function untilListed(registry: ToolRegistry, name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (names(await registry.listTools()).includes(name)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("tools/list requests per round against the SDK 2.x server over HTTP (2026-07-28 caching rules)", () => {
  test("ttlMs 0 (the SDK's default): stale at once, so every round after the first sends tools/list", async () => {
    const log = join(dir, "rounds-zero.log");
    await withHttp(["--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry) => {
        assert.deepEqual(await rounds(registry, 5), ["s__search"]);
        // One at the start (it serves round 1), one for each of rounds 2 to 5.
        assert.equal(count(methods(log), "tools/list"), 5, methods(log).join(", "));
      });
    });
  });

  test("ttlMs 600000: one tools/list for five rounds", async () => {
    const log = join(dir, "rounds-long.log");
    await withHttp(["--ttl-ms", "600000", "--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry) => {
        assert.deepEqual(await rounds(registry, 5), ["s__search"]);
        assert.equal(count(methods(log), "tools/list"), 1, methods(log).join(", "));
      });
    });
  });

  test("no ttlMs, tools.listChanged: no tools/list while no change is announced; the notice on the listen stream makes the next round list again, once", async () => {
    const log = join(dir, "rounds-absent.log");
    await withHttp(["--no-ttl", "--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry, era, warnings) => {
        assert.equal(era(), "modern");
        assert.deepEqual(await rounds(registry, 5), ["s__search"]);
        assert.equal(count(methods(log), "tools/list"), 1, methods(log).join(", "));
        assert.equal(count(methods(log), "subscriptions/listen"), 1, methods(log).join(", "));
        await callSearch(registry);
        await untilListed(registry, "s__summarize");
        await expectChanged(registry);
        assert.deepEqual(await rounds(registry, 5), ["s__summarize"]);
        assert.equal(count(methods(log), "tools/list"), 2, methods(log).join(", "));
        assert.deepEqual(warnings, []);
      });
    });
  });

  test("no ttlMs and no change notices: one tools/list until a call is refused as unknown, then one more, which shows the change", async () => {
    const log = join(dir, "rounds-absent-quiet.log");
    await withHttp(["--no-ttl", "--quiet", "--log", log], async ({ url }) => {
      await withRegistry(http(url), async (registry) => {
        await callSearch(registry);
        await new Promise((r) => setTimeout(r, 300));
        // The change was never announced: the list is kept as listed.
        assert.deepEqual(await rounds(registry, 5), ["s__search"]);
        assert.equal(count(methods(log), "tools/list"), 1, methods(log).join(", "));
        assert.equal(count(methods(log), "subscriptions/listen"), 0, methods(log).join(", "));
        // The server refuses the tool it dropped (JSON-RPC -32602): the next round lists again.
        const refused = await registry.callTool("s__search", {}, call);
        assert.equal(refused.isError, true);
        assert.match(textOf(refused), /JSON-RPC error -32602/);
        await expectChanged(registry);
        assert.equal(count(methods(log), "tools/list"), 2, methods(log).join(", "));
      });
    });
  });
});

describe("McpConnection.toolsStale", () => {
  test("modern: stale at once for ttlMs 0, fresh for a long ttlMs or without ttlMs until a change notice arrives; legacy: never (notices only)", async () => {
    const changes: string[] = [];
    const open = (args: string[], protocol?: McpEra) =>
      connectMcp(stdio(args, protocol), {
        sessionId: "stale",
        env: process.env,
        onToolsChanged: () => changes.push(args.join(" ")),
      });
    const zero = await open([]);
    try {
      await zero.listTools();
      assert.equal(zero.era, "modern");
      assert.equal(zero.toolsStale, true);
    } finally {
      await zero.close();
    }
    const long = await open(["--ttl-ms", "600000"]);
    try {
      await long.listTools();
      assert.equal(long.toolsStale, false);
      await long.callTool("search", {});
      assert.equal(long.toolsStale, true);
      assert.ok(changes.length >= 1);
      assert.deepEqual((await long.listTools()).map((t) => t.name).sort(), ["_Stop", "summarize"]);
      assert.equal(long.toolsStale, false);
    } finally {
      await long.close();
    }
    assert.equal(long.toolsStale, false, "a closed connection is not stale");
    const absent = await open(["--no-ttl"]);
    try {
      await absent.listTools();
      assert.equal(absent.era, "modern");
      assert.equal(absent.toolsStale, false, "no ttlMs: fresh until a change notice");
      await absent.callTool("search", {});
      assert.equal(absent.toolsStale, true);
      await absent.listTools();
      assert.equal(absent.toolsStale, false);
    } finally {
      await absent.close();
    }
    const legacy = await open([], "legacy");
    try {
      await legacy.listTools();
      assert.equal(legacy.era, "legacy");
      assert.equal(legacy.toolsStale, false);
    } finally {
      await legacy.close();
    }
  });
});

describe("subscriptions/listen edge cases (hand-written modern stdio server)", () => {
  function modern(flags: string[] = []): McpServerConfig {
    return {
      name: "m",
      transport: { type: "stdio", command: "node", args: [`${fixtures}modern-listen.mjs`, ...flags], env: {} },
    };
  }

  async function withModern(
    flags: string[],
    body: (conn: McpConnection, warnings: string[], changes: () => number) => Promise<void>,
    initTimeoutMs = 20_000,
  ): Promise<void> {
    const warnings: string[] = [];
    let changes = 0;
    const conn = await connectMcp(modern(flags), {
      sessionId: "edge",
      env: process.env,
      initTimeoutMs,
      onWarning: (m) => warnings.push(m),
      onToolsChanged: () => changes++,
    });
    try {
      assert.equal(conn.era, "modern");
      await body(conn, warnings, () => changes);
    } finally {
      await conn.close();
    }
  }

  const listens = async (conn: McpConnection) => textOf(await conn.callTool("listens", {}));

  test("the server ends the subscription (notifications/cancelled): the list is stale, the next listTools subscribes again, and notices flow again", async () => {
    await withModern([], async (conn, warnings, changes) => {
      await conn.listTools();
      assert.equal(conn.toolsStale, false);
      assert.equal(await listens(conn), "listens 1, cancelled 0");
      await conn.callTool("drop", {});
      assert.equal(await waitFor(() => changes() === 1, 5000), true);
      assert.equal(conn.toolsStale, true);
      assert.equal(warnings.length, 1);
      assert.match(
        warnings[0]!,
        /^Server "m" ended the subscription to its tool-list changes \(the server cancelled it\)/,
      );
      await conn.listTools();
      assert.equal(conn.toolsStale, false);
      assert.equal(await listens(conn), "listens 2, cancelled 0");
      await conn.callTool("change", {});
      assert.equal(await waitFor(() => changes() === 2, 5000), true);
      assert.equal(conn.toolsStale, true);
      assert.deepEqual((await conn.listTools()).map((t) => t.name), ["listens", "drop", "change", "extra"]);
      assert.equal(warnings.length, 1);
    });
  });

  test("a failing tools/list keeps the previous list fresh for a while instead of asking again every round", async () => {
    await withModern([], async (conn, _warnings, changes) => {
      await conn.listTools();
      await conn.callTool("fail-list", {});
      await conn.callTool("change", {});
      assert.equal(await waitFor(() => changes() === 1, 5000), true);
      assert.equal(conn.toolsStale, true);
      await assert.rejects(conn.listTools(), /list broken/);
      assert.equal(conn.toolsStale, false);
    });
  });

  test("a refused subscription is a warning; the connection works on its freshness hint", async () => {
    await withModern(["--refuse"], async (conn, warnings) => {
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /^Cannot subscribe to the tool-list changes of server "m": .*Method not found/);
      await conn.listTools();
      assert.equal(conn.toolsStale, false);
      assert.equal(await listens(conn), "listens 1, cancelled 0");
    });
  });

  test("an acknowledgement without toolsListChanged is a warning and ends the subscription", async () => {
    await withModern(["--partial"], async (conn, warnings) => {
      assert.deepEqual(warnings, [
        'Server "m" did not accept a subscription to its tool-list changes; relying on its freshness hint',
      ]);
      await conn.listTools();
      assert.equal(await listens(conn), "listens 1, cancelled 1");
    });
  });

  test("no acknowledgement: connecting goes on after the connect timeout, the request is cancelled", async () => {
    const started = performance.now();
    await withModern(["--no-ack"], async (conn, warnings) => {
      assert.ok(performance.now() - started >= 1000);
      assert.equal(warnings.length, 1);
      assert.match(
        warnings[0]!,
        /^Cannot subscribe to the tool-list changes of server "m": no acknowledgement within \d/,
      );
      assert.deepEqual((await conn.listTools()).map((t) => t.name), ["listens", "drop", "change"]);
      assert.equal(await listens(conn), "listens 1, cancelled 1");
    }, 1500);
  });
});
