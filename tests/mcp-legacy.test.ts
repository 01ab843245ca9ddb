/**
 * Legacy servers that answer the era probe badly connect with no configuration (SPEC section
 * 10, issue 25): fixtures reproducing, byte for byte, the Python SDK `mcp` 1.0.0–1.9.3 (silent
 * on the probe, exits on the next line), the Swift SDK in strict mode (silent on the probe,
 * answers a notification with a random id) and the PHP SDK 0.7.1 (answers with `id: ""`),
 * each citing its source; the nudge costs a modern server that is slow to start nothing (it is
 * started once and detected modern: tests/mcp-client.test.ts "a stdio server slow to answer
 * its first request by 3 s…"); -32022 needs no more than `initialize`; no common version names
 * both lists; an ACP `mcpServers` entry pins an era through `_meta`. CASES C41.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { acpServers } from "../lib/acp/params.ts";
import { connectMcp } from "../lib/mcp/client.ts";
import { JsonRpcPeer } from "../lib/mcp/jsonrpc.ts";
import type { JsonRpcMessage } from "../lib/mcp/jsonrpc.ts";
import type { McpConnectOptions, McpServerConfig } from "../lib/mcp/types.ts";
import { AgentError } from "../lib/util/errors.ts";
import { fixtures, rawServer, textOf, waitFor } from "./fixtures/mcp/helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sprout-legacy-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function options(extra: Partial<McpConnectOptions> = {}): McpConnectOptions {
  return { sessionId: "sess-legacy", env: process.env, ...extra };
}

/** A fixture of tests/fixtures/mcp/legacy/ that counts its starts and records what it read. */
function legacy(name: string, file: string, flags: string[] = []): {
  config: McpServerConfig;
  starts: () => number;
  wire: () => Array<{ id?: unknown; method?: string; params?: Record<string, unknown> }>;
} {
  const pidfile = join(dir, `${name}.pids`);
  const wire = join(dir, `${name}.wire`);
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8").split("\n").filter((l) => l !== "");
    } catch {
      return [];
    }
  };
  return {
    config: {
      name,
      transport: {
        type: "stdio",
        command: "node",
        args: [`${fixtures}legacy/${file}`, `--pidfile=${pidfile}`, `--wire=${wire}`, ...flags],
        env: {},
      },
    },
    starts: () => read(pidfile).length,
    wire: () => read(wire).map((l) => JSON.parse(l)),
  };
}

/** Connects with no configuration but the command, lists and calls, and returns how long the connect took. */
async function connectsAlone(config: McpServerConfig, version: string): Promise<number> {
  const started = Date.now();
  const c = await connectMcp(config, options());
  const ms = Date.now() - started;
  try {
    assert.equal(c.era, "legacy");
    assert.equal(c.protocolVersion, version);
    assert.deepEqual((await c.listTools()).map((t) => t.name).sort(), ["add", "echo"]);
    assert.equal(textOf(await c.callTool("add", { a: 2, b: 40 })), "42");
  } finally {
    await c.close();
  }
  return ms;
}

// Each would have waited for the 30 s init timeout and failed; the margin leaves room for a
// slow start of node on a loaded machine (two starts for the Python SDK).
const FEW_SECONDS = 15_000;

describe("legacy servers that answer the probe badly connect with no configuration", () => {
  test("C41 the Python SDK mcp 1.0.0–1.9.3: silent on server/discover, it exits on the nudge and is started again in legacy", async () => {
    const server = legacy("python", "python-mcp-1.9.3.mjs");
    const ms = await connectsAlone(server.config, "2025-03-26");
    assert.ok(ms < FEW_SECONDS, `connected in ${ms} ms`);
    assert.equal(server.starts(), 2, "started twice: the first process exits on the line after the probe");
    const methods = server.wire().map((m) => m.method);
    assert.deepEqual(methods.slice(0, 2), ["server/discover", "notifications/cancelled"]);
    assert.deepEqual(methods.slice(2, 4), ["initialize", "notifications/initialized"], "the second process: legacy");
  });

  test("C41 the Python SDK mcp 1.9.3 slow to start (its imports): the probe and the nudge arrive together, and it still connects", async () => {
    const server = legacy("python-slow", "python-mcp-1.9.3.mjs", ["--start-ms=1500"]);
    const ms = await connectsAlone(server.config, "2025-03-26");
    assert.ok(ms < FEW_SECONDS + 3000, `connected in ${ms} ms`);
    assert.equal(server.starts(), 2);
  });

  test("C41 the Swift SDK in strict mode: silent on server/discover, its error answer to the nudge (a random id) means legacy, on the same process", async () => {
    const server = legacy("swift", "swift-strict.mjs");
    const ms = await connectsAlone(server.config, "2025-11-25");
    assert.ok(ms < FEW_SECONDS, `connected in ${ms} ms`);
    assert.equal(server.starts(), 1, "started once");
    const methods = server.wire().map((m) => m.method);
    assert.deepEqual(methods.slice(0, 4), [
      "server/discover",
      "notifications/cancelled",
      "initialize",
      "notifications/initialized",
    ]);
    const nudge = server.wire()[1]!;
    assert.equal(nudge.params?.requestId, "sprout-agent/era-probe-nudge", "the nudge cancels no request of ours");
    assert.equal(
      (nudge.params?._meta as Record<string, unknown>)["io.modelcontextprotocol/protocolVersion"],
      "2026-07-28",
      "in the modern envelope, so that a modern server keeps the probe's era",
    );
  });

  test('C41 the PHP SDK 0.7.1: its error to server/discover with id "" is the probe\'s answer: legacy at once, no nudge', async () => {
    const server = legacy("php", "php-0.7.1.mjs");
    await connectsAlone(server.config, "2025-06-18");
    assert.equal(server.starts(), 1);
    assert.deepEqual(server.wire().map((m) => m.method).slice(0, 3), [
      "server/discover",
      "initialize",
      "notifications/initialized",
    ]);
  });

  test('over HTTP, an error answer with id "" (the PHP SDK 0.7.1) is the POST\'s answer: legacy at once', async () => {
    const methods: string[] = [];
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        const body = raw === "" ? undefined : JSON.parse(raw);
        methods.push(body?.method ?? req.method);
        if (body === undefined) return void res.writeHead(405).end();
        if (body.id === undefined) return void res.writeHead(202).end();
        res.writeHead(200, { "content-type": "application/json" });
        if (body.method === "server/discover") {
          // PHP's json_encode, byte for byte (tests/fixtures/mcp/legacy/php-0.7.1.mjs).
          return void res.end(
            '{"jsonrpc":"2.0","id":"","error":{"code":-32600,"message":"Unknown method \\"server\\/discover\\"."}}',
          );
        }
        const result = body.method === "initialize"
          ? {
            protocolVersion: "2025-06-18",
            capabilities: { tools: {} },
            serverInfo: { name: "php", version: "0.7.1" },
          }
          : { tools: [] };
        res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, result }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
      const c = await connectMcp({ name: "php", transport: { type: "http", url, headers: {} } }, options());
      try {
        assert.equal(c.era, "legacy");
        assert.equal(c.protocolVersion, "2025-06-18");
      } finally {
        await c.close();
      }
      assert.deepEqual(methods.slice(0, 2), ["server/discover", "initialize"]);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test("a server silent on the probe and on the nudge still fails at the init timeout, naming the fix", async () => {
    await assert.rejects(
      connectMcp(rawServer("silent", ["--probe=silent"]), options({ initTimeoutMs: 2500 })),
      (e: unknown) => e instanceof AgentError && e.code === "mcp-connect" && /"protocol": "legacy"/.test(e.message),
    );
  });
});

describe("version negotiation", () => {
  test("after -32022 listing legacy versions, initialize is the only request before tools/list", async () => {
    const wire = join(dir, "u32022.wire");
    const config: McpServerConfig = {
      name: "u32022",
      transport: {
        type: "stdio",
        command: "node",
        args: [`${fixtures}legacy/unsupported-version.mjs`, `--wire=${wire}`],
        env: {},
      },
    };
    const c = await connectMcp(config, options());
    try {
      assert.equal(c.era, "legacy");
      assert.equal(c.protocolVersion, "2025-11-25");
      assert.deepEqual(await c.listTools(), []);
    } finally {
      await c.close();
    }
    const sent = readFileSync(wire, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
    const untilList = sent.slice(0, sent.findIndex((m) => m.method === "tools/list"));
    assert.deepEqual(untilList.filter((m) => m.id !== undefined).map((m) => m.method), [
      "server/discover",
      "initialize",
    ]);
  });

  test("over HTTP, after -32022: discover, initialize and its notification before tools/list; the GET stream after it", async () => {
    const log: string[] = [];
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        const body = raw === "" ? undefined : JSON.parse(raw);
        log.push(`${req.method} ${body?.method ?? ""}`.trim());
        const json = (status: number, message: unknown) => {
          res.writeHead(status, { "content-type": "application/json", "mcp-session-id": "S1" });
          res.end(JSON.stringify(message));
        };
        if (body === undefined) return void res.writeHead(req.method === "DELETE" ? 200 : 405).end();
        if (body.id === undefined) return void res.writeHead(202).end();
        if (body.method === "server/discover") {
          return json(400, {
            jsonrpc: "2.0",
            id: body.id,
            error: {
              code: -32022,
              message: "Unsupported protocol version: 2026-07-28",
              data: { supported: ["2025-11-25"], requested: "2026-07-28" },
            },
          });
        }
        if (body.method === "initialize") {
          return json(200, {
            jsonrpc: "2.0",
            id: body.id,
            result: { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "h", version: "0" } },
          });
        }
        json(200, { jsonrpc: "2.0", id: body.id, result: { tools: [] } });
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
      const c = await connectMcp({ name: "h", transport: { type: "http", url, headers: {} } }, options());
      try {
        assert.deepEqual(await c.listTools(), []);
        assert.ok(await waitFor(() => log.includes("GET"), 10_000), "the standalone stream was opened");
      } finally {
        await c.close();
      }
      assert.deepEqual(log.slice(0, log.indexOf("POST tools/list")), [
        "POST server/discover",
        "POST initialize",
        "POST notifications/initialized",
      ]);
      assert.ok(log.indexOf("GET") > log.indexOf("POST tools/list"));
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test("no common version: the error names the server's versions and the agent's", async () => {
    const config: McpServerConfig = {
      name: "future",
      transport: {
        type: "stdio",
        command: "node",
        args: [`${fixtures}legacy/unsupported-version.mjs`, "--supported=2027-01-01"],
        env: {},
      },
    };
    await assert.rejects(connectMcp(config, options()), (e: unknown) => {
      assert.ok(e instanceof AgentError && e.code === "mcp-connect");
      assert.match(
        e.message,
        /no common protocol version \(the server supports \["2027-01-01"\], the agent \["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"\]\)/,
      );
      return true;
    });
  });
});

describe("stray error answers (lib/mcp/jsonrpc.ts)", () => {
  function peer(sent: JsonRpcMessage[]): JsonRpcPeer {
    return new JsonRpcPeer({ label: 'server "p"', send: (m) => (sent.push(m), Promise.resolve()) });
  }

  test('an error with id "", null or one never sent answers a takesStrayError request alone; with another pending, it is dropped', async () => {
    for (const id of ["", null, "7F1C5E2A-0000-4000-8000-000000000000", 99]) {
      const sent: JsonRpcMessage[] = [];
      const p = peer(sent);
      const probe = p.request("server/discover", {}, { takesStrayError: true });
      p.receive({ jsonrpc: "2.0", id, error: { code: -32600, message: "no" } });
      await assert.rejects(probe, /no \(code -32600\)/, `id ${JSON.stringify(id)}`);
    }
    const sent: JsonRpcMessage[] = [];
    const p = peer(sent);
    const probe = p.request("server/discover", {}, { takesStrayError: true, timeoutMs: 200 });
    const other = p.request("initialize", {}, { timeoutMs: 200 });
    p.receive({ jsonrpc: "2.0", id: "", error: { code: -32600, message: "no" } });
    await assert.rejects(probe, (e: unknown) => e instanceof AgentError && e.code === "timeout");
    await assert.rejects(other, (e: unknown) => e instanceof AgentError && e.code === "timeout");
  });

  test("a stray error is never taken by a request without takesStrayError", async () => {
    const p = peer([]);
    const call = p.request("tools/call", {}, { timeoutMs: 200 });
    p.receive({ jsonrpc: "2.0", id: "", error: { code: -32600, message: "no" } });
    await assert.rejects(call, (e: unknown) => e instanceof AgentError && e.code === "timeout");
    assert.equal(p.discardedReplies, 1);
  });
});

describe("ACP sessions pin a server's era (lib/acp/params.ts)", () => {
  test('_meta["sprout-agent/protocol"] in an mcpServers entry becomes the server\'s protocol; a bad value is -32602', () => {
    const [stdio, http, plain] = acpServers([
      { name: "s", command: "node", args: [], env: [], _meta: { "sprout-agent/protocol": "legacy" } },
      {
        type: "http",
        name: "h",
        url: "http://127.0.0.1:1/mcp",
        headers: [],
        _meta: { "sprout-agent/protocol": "modern" },
      },
      { name: "p", command: "node", args: [], env: [], _meta: { other: 1 } },
    ], "/tmp");
    assert.equal(stdio!.protocol, "legacy");
    assert.equal(http!.protocol, "modern");
    assert.equal(plain!.protocol, undefined);
    assert.throws(
      () => acpServers([{ name: "s", command: "node", _meta: { "sprout-agent/protocol": "2025" } }], "/tmp"),
      /mcpServers\[0\] \("s"\)\._meta\["sprout-agent\/protocol"\] must be "modern" or "legacy"/,
    );
    assert.throws(() => acpServers([{ name: "s", command: "node", _meta: [] }], "/tmp"), /_meta must be an object/);
  });

  test("a server that ignores unknown requests connects at once when the ACP client pins legacy", async () => {
    const [config] = acpServers([{
      name: "silent",
      command: "node",
      args: [`${fixtures}raw-server.mjs`, "--probe=silent"],
      env: [],
      _meta: { "sprout-agent/protocol": "legacy" },
    }], process.cwd());
    const c = await connectMcp(config!, options({ initTimeoutMs: 5000 }));
    try {
      assert.equal(c.era, "legacy");
      assert.equal(textOf(await c.callTool("echo", { text: "hi" })), "echo: hi");
    } finally {
      await c.close();
    }
  });
});
