// deno-lint-ignore-file no-explicit-any
/**
 * lib/mcp/ against real peers: the official SDK 1.x (legacy) and 2.x (both eras) servers over
 * stdio and Streamable HTTP, each run under node, bun and deno (the cross-runtime matrix runs
 * once), and the real third-party servers from node_modules/.bin. Also the Streamable HTTP
 * behaviours: custom headers, a lost legacy session, DELETE, auth errors, modern 404s, SSE.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError } from "../lib/util/errors.ts";
import { connectMcp } from "../lib/mcp/client.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { McpConnection, McpConnectOptions, McpEra, McpServerConfig } from "../lib/mcp/types.ts";
import { startHttpCommand, startHttpFixture, textOf, tsServer, waitFor } from "./fixtures/mcp/helpers.ts";
import type { HttpFixture } from "./fixtures/mcp/helpers.ts";
import { repoRoot, runsOnce, runtime } from "./helpers/runtime.ts";
import { BUFFERED_ON_LOOPBACK, startFloodServer } from "./helpers/flood-server.ts";
import type { Runtime } from "./helpers/runtime.ts";

const runtimes: Runtime[] = runsOnce ? ["node", "bun", "deno"] : [runtime()];
const bin = `${repoRoot}node_modules/.bin/`;

function options(extra: Partial<McpConnectOptions> = {}): McpConnectOptions {
  return { sessionId: "sess-interop", env: process.env, ...extra };
}

async function roundTrip(
  config: McpServerConfig,
  era: McpEra,
  extra: Partial<McpConnectOptions> = {},
): Promise<McpConnection> {
  const c = await connectMcp(config, options(extra));
  try {
    assert.equal(c.era, era);
    const names = (await c.listTools()).map((t) => t.name);
    assert.ok(names.includes("add") && names.includes("echo"), names.join(","));
    assert.equal(textOf(await c.callTool("add", { a: 2, b: 40 })), "42");
    assert.equal(textOf(await c.callTool("echo", { text: "ünïcode ✓" })), "echo: ünïcode ✓");
  } finally {
    await c.close();
  }
  return c;
}

function http(
  name: string,
  url: string,
  extra: Partial<McpServerConfig> = {},
  headers: Record<string, string> = {},
): McpServerConfig {
  return { name, transport: { type: "http", url, headers }, ...extra };
}

describe("SDK servers over stdio", () => {
  for (const which of runtimes) {
    test(`SDK 1.x server under ${which}: detected legacy`, async () => {
      await roundTrip(tsServer("sdk1", "sdk1-stdio.ts", which), "legacy");
    });
    test(`SDK 1.x server under ${which}: pinned legacy`, async () => {
      await roundTrip({ ...tsServer("sdk1", "sdk1-stdio.ts", which), protocol: "legacy" }, "legacy");
    });
    test(`SDK 2.x server under ${which}: detected modern`, async () => {
      const c = await roundTrip(tsServer("sdk2", "sdk2-stdio.ts", which), "modern");
      assert.equal(c.protocolVersion, "2026-07-28");
      assert.equal(c.serverInfo?.name, "sdk2-fixture");
    });
    test(`SDK 2.x server under ${which}: pinned modern`, async () => {
      await roundTrip({ ...tsServer("sdk2", "sdk2-stdio.ts", which), protocol: "modern" }, "modern");
    });
    test(`SDK 2.x server under ${which}: pinned legacy`, async () => {
      await roundTrip({ ...tsServer("sdk2", "sdk2-stdio.ts", which), protocol: "legacy" }, "legacy");
    });
    test(`SDK 2.x legacy-only server under ${which}: detected legacy`, async () => {
      await roundTrip(tsServer("sdk2l", "sdk2-stdio.ts", which, ["--legacy-only"]), "legacy");
    });
  }
});

describe("SDK servers over Streamable HTTP", () => {
  for (const which of runtimes) {
    test(`SDK 1.x server under ${which}: detected legacy, with a session`, async () => {
      const server = await startHttpFixture("sdk1-http.ts", which);
      try {
        await roundTrip(http("sdk1h", server.url), "legacy");
      } finally {
        await server.stop();
      }
    });
    test(`SDK 2.x server under ${which}: detected modern, pinned modern and pinned legacy`, async () => {
      const server = await startHttpFixture("sdk2-http.ts", which);
      try {
        await roundTrip(http("sdk2h", server.url), "modern");
        await roundTrip(http("sdk2h", server.url, { protocol: "modern" }), "modern");
        await roundTrip(http("sdk2h", server.url, { protocol: "legacy" }), "legacy");
      } finally {
        await server.stop();
      }
    });
    test(`SDK 2.x modern-only server under ${which}: detected modern`, async () => {
      const server = await startHttpFixture("sdk2-http.ts", which, ["--reject-legacy"]);
      try {
        await roundTrip(http("sdk2m", server.url), "modern");
      } finally {
        await server.stop();
      }
    });
  }
});

describe("legacy Streamable HTTP sessions (SDK 1.x server)", () => {
  let server: HttpFixture;
  before(async () => {
    server = await startHttpFixture("sdk1-http.ts", runtime());
  });
  after(async () => {
    await server.stop();
  });

  test("custom headers from the configuration are sent with every request", async () => {
    const c = await connectMcp(
      http("h", server.url, {}, { Authorization: "Bearer tok-123", "X-Custom": "yes" }),
      options(),
    );
    try {
      const headers = JSON.parse(textOf(await c.callTool("headers", {})));
      assert.equal(headers.authorization, "Bearer tok-123");
      assert.equal(headers["x-custom"], "yes");
      assert.equal(headers["mcp-protocol-version"], "2025-11-25");
      assert.ok(headers["mcp-session-id"]);
      assert.match(headers.accept, /application\/json/);
      assert.match(headers.accept, /text\/event-stream/);
    } finally {
      await c.close();
    }
  });

  test("a 404 for a known session re-initialises once and retries the request", async () => {
    const warnings: string[] = [];
    const c = await connectMcp(http("lost", server.url), options({ onWarning: (m) => warnings.push(m) }));
    try {
      const before = JSON.parse(textOf(await c.callTool("stats", {})));
      await fetch(new URL("/admin/drop-sessions", server.url), { method: "POST" }).then((r) => r.text());
      assert.equal(textOf(await c.callTool("echo", { text: "again" })), "echo: again");
      const afterDrop = JSON.parse(textOf(await c.callTool("stats", {})));
      assert.equal(afterDrop.initializeCount, before.initializeCount + 1);
      assert.ok(warnings.some((w) => w.includes("lost session")));
    } finally {
      await c.close();
    }
  });

  test("close() deletes the legacy session", async () => {
    const watcher = await connectMcp(http("watch", server.url), options());
    try {
      const count = () => watcher.callTool("stats", {}).then((r) => JSON.parse(textOf(r)).sessions as number);
      const base = await count();
      const c = await connectMcp(http("del", server.url), options());
      assert.equal(await count(), base + 1);
      await c.close();
      assert.equal(await count(), base);
    } finally {
      await watcher.close();
    }
  });
});

/** A tiny raw HTTP peer: `handler` gets each parsed POST body; every request is recorded. */
async function rawHttp(
  handler: (body: any, req: IncomingMessage, res: ServerResponse) => void,
): Promise<
  { url: string; log: Array<{ method: string; body: any; headers: IncomingMessage["headers"] }>; server: Server }
> {
  const log: Array<{ method: string; body: any; headers: IncomingMessage["headers"] }> = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (d: Buffer) => (text += d.toString()));
    req.on("end", () => {
      const body = text === "" ? undefined : JSON.parse(text);
      log.push({ method: req.method ?? "", body, headers: req.headers });
      handler(body, req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}/mcp`, log, server };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections?.();
  return new Promise((r) => server.close(() => r()));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

describe("Streamable HTTP edge cases (raw peers)", () => {
  test("401 is an error, never a reason to fall back to legacy", async () => {
    const peer = await rawHttp((_body, _req, res) => res.writeHead(401, { "www-authenticate": "Bearer" }).end("no"));
    try {
      await assert.rejects(connectMcp(http("auth", peer.url), options()), (e: unknown) => {
        assert.ok(e instanceof AgentError && e.code === "mcp-connect");
        assert.match(e.message, /HTTP 401/);
        return true;
      });
      assert.deepEqual(peer.log.map((r) => r.body?.method), ["server/discover"]);
    } finally {
      await closeServer(peer.server);
    }
  });

  test("-32020 (header mismatch) is an error naming it, never a reason to fall back to legacy", async () => {
    // The official v2 SDK's answer when the headers disagree with the body (HTTP 400).
    const peer = await rawHttp((body, _req, res) =>
      json(res, 400, {
        jsonrpc: "2.0",
        id: body.id,
        error: {
          code: -32020,
          message:
            'Bad Request: the request headers and body disagree: the Mcp-Method header carries "tools/list" but the body method is "server/discover"',
          data: { mismatch: { header: "Mcp-Method", body: "method" } },
        },
      })
    );
    try {
      await assert.rejects(connectMcp(http("mismatch", peer.url), options()), (e: unknown) => {
        assert.ok(e instanceof AgentError && e.code === "mcp-connect");
        assert.match(
          e.message,
          /^Cannot connect to server "mismatch": it refused the request's headers \(header mismatch, code -32020\): Bad Request: the request headers and body disagree/,
        );
        return true;
      });
      assert.deepEqual(peer.log.map((r) => r.body?.method), ["server/discover"], "no initialize");
    } finally {
      await closeServer(peer.server);
    }
  });

  test("a JSON-RPC error with a null id answering the probe (HTTP 200) is a legacy answer at once", async () => {
    const peer = await rawHttp((body, _req, res) => {
      if (body === undefined) return void res.writeHead(405).end();
      if (body.id === undefined) return void res.writeHead(202).end();
      if (body.method === "server/discover") {
        return json(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request" } });
      }
      if (body.method === "initialize") {
        return json(res, 200, {
          jsonrpc: "2.0",
          id: body.id,
          result: { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "old", version: "0" } },
        });
      }
      json(res, 200, { jsonrpc: "2.0", id: body.id, result: { tools: [] } });
    });
    try {
      const started = Date.now();
      const c = await connectMcp(http("nullid", peer.url), options({ initTimeoutMs: 30_000 }));
      assert.equal(c.era, "legacy");
      // At once: not after the 30 s init timeout (the bound is generous for a loaded machine).
      assert.ok(Date.now() - started < 10_000, `at once (took ${Date.now() - started} ms)`);
      await c.close();
    } finally {
      await closeServer(peer.server);
    }
  });

  test("modern requests carry MCP-Protocol-Version, Mcp-Method, Mcp-Name and the _meta envelope; a 404 is not a lost session", async () => {
    const peer = await rawHttp((body, _req, res) => {
      if (body.id === undefined) return void res.writeHead(202).end();
      if (body.method === "server/discover") {
        return json(res, 200, {
          jsonrpc: "2.0",
          id: body.id,
          result: {
            resultType: "complete",
            supportedVersions: ["2026-07-28"],
            capabilities: { tools: {} },
            serverInfo: { name: "raw-modern", version: "1" },
          },
        });
      }
      if (body.params?.name === "missing") {
        return json(res, 404, { jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "Tool not found" } });
      }
      json(res, 200, {
        jsonrpc: "2.0",
        id: body.id,
        result: { resultType: "complete", content: [{ type: "text", text: "ok" }] },
      });
    });
    try {
      const c = await connectMcp(http("modern", peer.url), options());
      assert.equal(c.era, "modern");
      assert.deepEqual(c.serverInfo, { name: "raw-modern", version: "1" });
      const result = await c.callTool("naïve tool", {});
      assert.deepEqual(result, { content: [{ type: "text", text: "ok" }] });
      await assert.rejects(c.callTool("missing", {}), /Tool not found/);
      await c.close();
      const call = peer.log.find((r) => r.body?.params?.name === "naïve tool")!;
      assert.equal(call.headers["mcp-protocol-version"], "2026-07-28");
      assert.equal(call.headers["mcp-method"], "tools/call");
      assert.equal(call.headers["mcp-name"], `=?base64?${Buffer.from("naïve tool").toString("base64")}?=`);
      assert.equal(call.headers["mcp-session-id"], undefined);
      const meta = call.body.params._meta;
      assert.equal(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
      assert.equal(meta["io.modelcontextprotocol/clientInfo"].name, "sprout-agent");
      // No input handler given: only the tasks extension, which the connection itself speaks (SPEC 10).
      assert.deepEqual(meta["io.modelcontextprotocol/clientCapabilities"], {
        extensions: { "io.modelcontextprotocol/tasks": {} },
      });
      assert.equal(meta["sprout-agent/session"], "sess-interop");
      assert.ok(!peer.log.some((r) => r.body?.method === "initialize"), "no initialize after a modern 404");
      assert.ok(!peer.log.some((r) => r.method === "DELETE"));
    } finally {
      await closeServer(peer.server);
    }
  });

  test("-32022 listing a legacy version switches to legacy and initialize follows", async () => {
    const peer = await rawHttp((body, _req, res) => {
      if (body === undefined) return void res.writeHead(405).end();
      if (body.id === undefined) return void res.writeHead(202).end();
      if (body.method === "server/discover") {
        return json(res, 400, {
          jsonrpc: "2.0",
          id: body.id,
          error: { code: -32022, message: "Unsupported protocol version", data: { supported: ["2025-06-18"] } },
        });
      }
      if (body.method === "initialize") {
        return json(res, 200, {
          jsonrpc: "2.0",
          id: body.id,
          result: { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "old", version: "0" } },
        });
      }
      json(res, 200, { jsonrpc: "2.0", id: body.id, result: { tools: [] } });
    });
    try {
      const c = await connectMcp(http("v", peer.url), options());
      assert.equal(c.era, "legacy");
      assert.equal(c.protocolVersion, "2025-06-18");
      assert.deepEqual(await c.listTools(), []);
      // The GET is sent beside tools/list, not before it: wait for it rather than race close().
      assert.ok(
        await waitFor(() => peer.log.some((r) => r.method === "GET"), 10_000),
        "the standalone event stream was tried",
      );
      await c.close();
      const posts = peer.log.filter((r) => r.method === "POST").map((r) => r.body?.method);
      assert.deepEqual(posts, ["server/discover", "initialize", "notifications/initialized", "tools/list"]);
    } finally {
      await closeServer(peer.server);
    }
  });

  test("an SSE answer is read until our response, and server requests on the stream are answered", async () => {
    const peer = await rawHttp((body, _req, res) => {
      if (body === undefined) return void res.writeHead(200).end();
      if (body.method === "server/discover") {
        return json(res, 404, { jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "nope" } });
      }
      if (body.method === "initialize") {
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "S1" });
        return void res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: body.id,
            result: { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "sse", version: "0" } },
          }),
        );
      }
      if (body.id === undefined || body.method === undefined) return void res.writeHead(202).end();
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: "s-ping", method: "ping" })}\n\n`);
      res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" })}\n\n`);
      res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: "s-x", method: "roots/list" })}\n\n`);
      setTimeout(() => {
        res.write(
          `data: ${
            JSON.stringify({ jsonrpc: "2.0", id: body.id, result: { content: [{ type: "text", text: "via sse" }] } })
          }\n\n`,
        );
      }, 50);
    });
    let changed = 0;
    try {
      const c = await connectMcp(http("sse", peer.url), options({ onToolsChanged: () => changed++ }));
      assert.equal(textOf(await c.callTool("t", {})), "via sse");
      // The client answers the server's requests in POSTs of their own, which may arrive after
      // the call's answer (a fixed pause could lose that race on a loaded machine): wait for both.
      const answers = () => peer.log.filter((r) => r.body && r.body.method === undefined).map((r) => r.body);
      assert.ok(await waitFor(() => answers().length >= 2, 10_000), "both server requests were answered");
      await c.close();
      assert.equal(changed, 1);
      assert.deepEqual(answers().find((a) => a.id === "s-ping"), { jsonrpc: "2.0", id: "s-ping", result: {} });
      assert.equal(answers().find((a) => a.id === "s-x")?.error.code, -32601);
      const afterInit = peer.log.slice(peer.log.findIndex((r) => r.body?.method === "initialize") + 1);
      for (const r of afterInit.filter((r) => r.method === "POST")) {
        assert.equal(r.headers["mcp-session-id"], "S1");
      }
      assert.ok(peer.log.some((r) => r.method === "DELETE" && r.headers["mcp-session-id"] === "S1"));
    } finally {
      await closeServer(peer.server);
    }
  });
});

describe("third-party servers from node_modules/.bin", () => {
  const dir = mkdtempSync(join(tmpdir(), "mcp-3p-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("mcp-server-filesystem: lists tools and reads a file", async () => {
    writeFileSync(join(dir, "hello.txt"), "hello from the filesystem");
    const config: McpServerConfig = {
      name: "fs",
      transport: { type: "stdio", command: `${bin}mcp-server-filesystem`, args: [dir], env: {} },
    };
    const c = await connectMcp(config, options());
    try {
      const names = (await c.listTools()).map((t) => t.name);
      assert.ok(names.includes("read_text_file"), names.join(","));
      const result = await c.callTool("read_text_file", { path: join(dir, "hello.txt") });
      assert.equal(textOf(result), "hello from the filesystem");
    } finally {
      await c.close();
    }
  });

  test("mcp-server-memory: creates an entity and reads it back", async () => {
    const config: McpServerConfig = {
      name: "memory",
      transport: {
        type: "stdio",
        command: `${bin}mcp-server-memory`,
        args: [],
        env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") },
      },
    };
    const c = await connectMcp(config, options());
    try {
      const names = (await c.listTools()).map((t) => t.name);
      assert.ok(names.includes("create_entities") && names.includes("read_graph"));
      await c.callTool("create_entities", {
        entities: [{ name: "sprout", entityType: "agent", observations: ["likes hooks"] }],
      });
      assert.match(textOf(await c.callTool("read_graph", {})), /likes hooks/);
    } finally {
      await c.close();
    }
  });

  test("mcp-server-everything over stdio: echo", async () => {
    const config: McpServerConfig = {
      name: "everything",
      transport: { type: "stdio", command: `${bin}mcp-server-everything`, args: ["stdio"], env: {} },
    };
    const c = await connectMcp(config, options());
    try {
      assert.ok((await c.listTools()).some((t) => t.name === "echo"));
      assert.match(textOf(await c.callTool("echo", { message: "hi there" })), /hi there/);
    } finally {
      await c.close();
    }
  });

  test("mcp-server-everything over Streamable HTTP: echo", async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    const server = await startHttpCommand(
      `${bin}mcp-server-everything`,
      ["streamableHttp"],
      { ...process.env, PORT: String(port) },
      /listening on port (\d+)/,
      true,
    );
    try {
      const c = await connectMcp(http("everything-http", server.url), options());
      try {
        assert.ok((await c.listTools()).some((t) => t.name === "echo"));
        assert.match(textOf(await c.callTool("echo", { message: "over http" })), /over http/);
      } finally {
        await c.close();
      }
    } finally {
      await server.stop();
    }
  });
});

describe("detection cost", { skip: !runsOnce }, () => {
  test("detecting a legacy SDK 1.x stdio server costs one extra round trip (measured)", async () => {
    // The server runs under bun: its start-up is short and steady, so the difference shows.
    const config = tsServer("cost", "sdk1-stdio.ts", "bun");
    const time = async (pinned: boolean) => {
      const started = performance.now();
      const c = await connectMcp(pinned ? { ...config, protocol: "legacy" } : config, options());
      const ms = performance.now() - started;
      await c.close();
      return ms;
    };
    await time(true); // warm up
    const detected: number[] = [];
    const pinned: number[] = [];
    for (let i = 0; i < 6; i++) {
      // alternate the order so that load drifts on the shared machine cancel out
      if (i % 2 === 0) {
        detected.push(await time(false));
        pinned.push(await time(true));
      } else {
        pinned.push(await time(true));
        detected.push(await time(false));
      }
    }
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return (sorted[2]! + sorted[3]!) / 2;
    };
    const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
    console.log(
      `detection cost (SDK 1.x stdio server under bun, client under ${runtime()}): detected ${
        median(detected).toFixed(0)
      } ms, ` +
        `pinned legacy ${median(pinned).toFixed(0)} ms (medians of 6; detected ${list(detected)}; pinned ${
          list(pinned)
        })`,
    );
    assert.ok(median(detected) < median(pinned) + 1500, "no probe timeout: the -32601 answer settles it");
  });
});

describe("Streamable HTTP answers are bounded (lib/mcp/http.ts)", () => {
  test("an endless JSON answer, an endless SSE event, an endless error body and an HTML page: each tool call is an error result naming the server, read no further than the cap", async () => {
    const MiB = 1024 * 1024;
    const modern = { resultType: "complete" };
    const tools = ["json", "sse", "error", "html", "echo"].map((name) => ({ name, inputSchema: { type: "object" } }));
    const server = await startFloodServer((body) => {
      if (body?.id === undefined) return { empty: 202 };
      const id = body.id;
      if (body.method === "server/discover") {
        return {
          json: {
            jsonrpc: "2.0",
            id,
            result: {
              ...modern,
              supportedVersions: ["2026-07-28"],
              capabilities: { tools: {} },
              serverInfo: { name: "flood", version: "1" },
            },
          },
        };
      }
      if (body.method === "tools/list") {
        return { json: { jsonrpc: "2.0", id, result: { ...modern, tools, ttlMs: 600_000 } } };
      }
      switch (body.params?.name) {
        case "json":
          return {
            contentType: "application/json",
            prefix: `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`,
          };
        case "sse":
          return { contentType: "text/event-stream", prefix: "event: message\ndata: " };
        case "error":
          return { status: 500, contentType: "text/plain", prefix: "Internal error: " };
        case "html":
          return { contentType: "text/html", prefix: "<html>" };
        default:
          return {
            json: { jsonrpc: "2.0", id, result: { ...modern, content: [{ type: "text", text: "still here" }] } },
          };
      }
    });
    const { registry, failures } = await createRegistry([{
      name: "flood",
      transport: { type: "http", url: `${server.url}/mcp`, headers: {} },
    }], {
      sessionId: "bounded",
      maxLineBytes: MiB,
    });
    try {
      assert.deepEqual(failures, []);
      const call = async (tool: string) => {
        const outcome = await registry.callTool(`flood__${tool}`, {}, { timeoutMs: 20_000 });
        assert.equal(outcome.isError, true, tool);
        return outcome.content.map((b) => (b.type === "text" ? b.text : "")).join("\n");
      };
      assert.match(
        await call("json"),
        /^Tool call to server "flood" failed: Request "tools\/call" to server "flood" failed: the JSON answer is larger than 1048576 bytes \(SPROUT_AGENT_MAX_LINE_BYTES\); the rest was not read/,
      );
      assert.match(
        await call("sse"),
        /^Tool call to server "flood" failed: Request "tools\/call" to server "flood" failed: an SSE event is larger than 1048576 bytes \(SPROUT_AGENT_MAX_LINE_BYTES\); the rest was not read/,
      );
      assert.match(
        await call("error"),
        /^Tool call to server "flood" failed: Request "tools\/call" to server "flood" failed: HTTP 500: Internal error: x{200}/,
      );
      assert.match(
        await call("html"),
        /^Tool call to server "flood" failed: Request "tools\/call" to server "flood" failed: unexpected answer \(HTTP 200, content type "text\/html"\)/,
      );
      const outcome = await registry.callTool("flood__echo", {}, { timeoutMs: 20_000 });
      assert.deepEqual(outcome.content, [{ type: "text", text: "still here" }], "the server is still usable");
      for (let i = 0; i < 100 && server.records.some((r) => r.closedAt === undefined); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      for (const [index, record] of server.records.entries()) {
        assert.equal(record.ended, false, `answer ${index} was not read to its end`);
        // 1 MiB is read; what the server wrote beyond it sits in loopback socket buffers (8.6 MB
        // seen under Bun with two test processes running).
        assert.ok(
          record.bytes < 1 * MiB + BUFFERED_ON_LOOPBACK,
          `answer ${index}: the server sent ${record.bytes} bytes`,
        );
        assert.notEqual(record.closedAt, undefined, `answer ${index}: the socket was closed`);
      }
    } finally {
      await registry.close();
      await server.close();
    }
  });
});
