/**
 * `prefetchTools` (lib/mcp/connection.ts, issue 24): over Streamable HTTP the first
 * `tools/list` goes out beside `server/discover`, and is the first page only when the server
 * speaks the modern revision and announces no `tools.listChanged`. Against the official SDKs'
 * servers: 2.x (modern), 2.x with list changes announced, 1.x (legacy).
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connectMcp } from "../lib/mcp/client.ts";
import type { McpServerConfig } from "../lib/mcp/types.ts";
import { startHttpFixture } from "./fixtures/mcp/helpers.ts";
import type { HttpFixture } from "./fixtures/mcp/helpers.ts";
import { runtime } from "./helpers/runtime.ts";

/** A fetch that records each POST's JSON-RPC method, its status, and how many were in flight when it was sent. */
function recordingFetch() {
  const sent: Array<{ method: string; status?: number; inFlight: number }> = [];
  let inFlight = 0;
  const fetcher = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = typeof init?.body === "string" ? String(JSON.parse(init.body).method) : String(init?.method);
    const entry: { method: string; status?: number; inFlight: number } = { method, inFlight };
    sent.push(entry);
    inFlight++;
    try {
      const response = await fetch(url, init);
      entry.status = response.status;
      return response;
    } finally {
      inFlight--;
    }
  };
  return { sent, fetch: fetcher as typeof fetch };
}

const config = (url: string): McpServerConfig => ({ name: "s", transport: { type: "http", url, headers: {} } });

async function connectAndList(url: string, prefetchTools: boolean) {
  const { sent, fetch } = recordingFetch();
  const conn = await connectMcp(config(url), { sessionId: "prefetch", fetch, prefetchTools });
  try {
    const tools = (await conn.listTools()).map((t) => t.name);
    return { era: conn.era, tools, sent, lists: sent.filter((s) => s.method === "tools/list") };
  } finally {
    await conn.close();
  }
}

describe("prefetchTools: the first tools/list beside server/discover", () => {
  const fixtures: Record<string, HttpFixture> = {};
  before(async () => {
    const which = runtime();
    [fixtures.quiet, fixtures.announcing, fixtures.legacy] = await Promise.all([
      startHttpFixture("sdk2-changes.ts", which, ["--http", "--quiet"]),
      startHttpFixture("sdk2-http.ts", which),
      startHttpFixture("sdk1-http.ts", which),
    ]);
  });
  after(async () => {
    await Promise.all(Object.values(fixtures).map((f) => f.stop()));
  });

  test("a modern server that announces no list changes: one tools/list, sent before discover was answered", async () => {
    const out = await connectAndList(fixtures.quiet!.url, true);
    assert.equal(out.era, "modern");
    assert.deepEqual(out.tools, ["search"]);
    assert.deepEqual(out.sent.map((s) => s.method), ["server/discover", "tools/list"]);
    assert.deepEqual([out.lists[0]!.inFlight, out.lists[0]!.status], [1, 200]);
    // Without the option: the list waits for discover's answer.
    const plain = await connectAndList(fixtures.quiet!.url, false);
    assert.deepEqual(plain.tools, out.tools);
    assert.deepEqual(plain.sent.map((s) => [s.method, s.inFlight]), [["server/discover", 0], ["tools/list", 0]]);
  });

  test("a server that announces list changes: the early answer is dropped, the tools listed after subscriptions/listen opens", async () => {
    const out = await connectAndList(fixtures.announcing!.url, true);
    assert.equal(out.era, "modern");
    assert.deepEqual(out.tools, ["echo", "add", "ask"]);
    const methods = out.sent.map((s) => s.method);
    assert.deepEqual(methods, ["server/discover", "tools/list", "subscriptions/listen", "tools/list"]);
  });

  test("a legacy server refuses the early list; the handshake and the list go on as without it", async () => {
    const out = await connectAndList(fixtures.legacy!.url, true);
    assert.equal(out.era, "legacy");
    const plain = await connectAndList(fixtures.legacy!.url, false);
    assert.deepEqual(out.tools, plain.tools);
    assert.ok(out.tools.includes("echo"), out.tools.join(", "));
    assert.equal(out.lists.length, 2);
    assert.ok(out.lists[0]!.status! >= 400, JSON.stringify(out.sent));
    assert.equal(out.lists[1]!.status, 200);
    assert.ok(out.sent.findIndex((s) => s.method === "initialize") < out.sent.lastIndexOf(out.lists[1]!));
  });
});
