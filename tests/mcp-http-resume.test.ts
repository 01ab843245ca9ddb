// deno-lint-ignore-file no-explicit-any
/**
 * Streamable HTTP resumption after any interruption (SPEC section 10, issue 25): a server that
 * resets the connection in the middle of an SSE event, on the POST's stream and on the
 * resuming GET's, is resumed with `Last-Event-ID` (the last whole event's id) within the
 * budget, and every message, the answer included, is handed on once, also when the server
 * replays events already read. Past the budget, or with no id to resume from, the call fails
 * naming the interruption. CASES C42.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connectMcp } from "../lib/mcp/client.ts";
import type { McpConnection } from "../lib/mcp/types.ts";
import { textOf } from "./fixtures/mcp/helpers.ts";

interface Logged {
  method: string;
  lastEventId: string | undefined;
}

const log: Logged[] = [];
/** Per tool: what the resuming GETs do, in order ("cut": reset before any event). */
let plan: { tool: string; gets: Array<"cut" | "finish" | "replay">; callId: number } = {
  tool: "",
  gets: [],
  callId: 0,
};

const event = (id: string, message: unknown, retry?: number) =>
  `${retry === undefined ? "" : `retry: ${retry}\n`}id: ${id}\ndata: ${JSON.stringify(message)}\n\n`;
/**
 * The whole event before the cut: a request from the server, whose answer (a POST) proves the
 * client read it before the connection is cut (a reset may drop bytes the client has not read
 * yet, so a cut on a timer would race it).
 */
const ping = { jsonrpc: "2.0", id: "srv-ping", method: "ping" };
let pingAnswers = 0;
/** Cuts the POST's stream once the ping is answered. */
let afterPing: (() => void) | undefined;
const answer = (id: number, text: string) => ({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text }] } });

/** Writes `text`, then resets the connection (no clean end of the chunked body). */
function cut(res: ServerResponse, text: string): void {
  res.write(text, () => setTimeout(() => res.socket?.destroy(), 20));
}

function handle(body: any, req: IncomingMessage, res: ServerResponse): void {
  const lastEventId = req.headers["last-event-id"] as string | undefined;
  log.push({ method: body?.method ?? req.method!, lastEventId });
  if (req.method === "GET") {
    if (lastEventId === undefined) return void res.writeHead(405).end(); // no standalone stream
    const step = plan.gets.shift() ?? "cut";
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (step === "cut") return cut(res, ": resuming\n\n");
    const full = event("e2", answer(plan.callId, `resumed after ${lastEventId}`));
    if (step === "replay") return void res.end(event("e1", ping) + full); // ignores Last-Event-ID
    return void res.end(full);
  }
  if (body.method === "initialize") {
    res.writeHead(200, { "content-type": "application/json" });
    return void res.end(JSON.stringify({
      jsonrpc: "2.0",
      id: body.id,
      result: { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "cut", version: "1" } },
    }));
  }
  if (body.id === "srv-ping" && body.method === undefined) {
    pingAnswers++;
    res.writeHead(202).end();
    afterPing?.();
    afterPing = undefined;
    return;
  }
  if (body.id === undefined || body.method === undefined) return void res.writeHead(202).end();
  plan.callId = body.id;
  res.writeHead(200, { "content-type": "text/event-stream" });
  const half = event("e2", answer(body.id, "never whole"));
  if (plan.tool === "no-id") return cut(res, `: no id\n\ndata: {"jsonrpc":"2.0",`);
  // One whole event (e1), then, once the client has read it, half of the answer (e2) and a reset.
  afterPing = () => cut(res, half.slice(0, half.length / 2));
  res.write(event("e1", ping, 10));
}

let server: Server;
let url = "";
before(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => handle(raw === "" ? undefined : JSON.parse(raw), req, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

async function call(tool: string, gets: Array<"cut" | "finish" | "replay">): Promise<{
  text: Promise<string>;
  c: McpConnection;
}> {
  log.length = 0;
  plan = { tool, gets, callId: 0 };
  pingAnswers = 0;
  const c = await connectMcp(
    { name: "cut", protocol: "legacy", transport: { type: "http", url, headers: {} } },
    { sessionId: "s", env: process.env },
  );
  return { text: c.callTool(tool, {}).then(textOf), c };
}

const gets = () => log.filter((l) => l.method === "GET" && l.lastEventId !== undefined).map((l) => l.lastEventId);

describe("Streamable HTTP: a stream cut in the middle of an event is resumed (lib/mcp/http.ts)", () => {
  test("C42 a reset inside the answer's event: resumed after the last whole event, the answer once", async () => {
    const { text, c } = await call("t", ["finish"]);
    try {
      assert.equal(await text, "resumed after e1");
      assert.deepEqual(gets(), ["e1"]);
      assert.equal(pingAnswers, 1, "the whole event before the cut was handed on once");
    } finally {
      await c.close();
    }
  });

  test("C42 the resuming GET reset too: resumed again, within the budget", async () => {
    const { text, c } = await call("t", ["cut", "cut", "finish"]);
    try {
      assert.equal(await text, "resumed after e1");
      assert.deepEqual(gets(), ["e1", "e1", "e1"]);
    } finally {
      await c.close();
    }
  });

  test("C42 a server that replays events already read: each message is handed on once", async () => {
    const { text, c } = await call("t", ["replay"]);
    try {
      assert.equal(await text, "resumed after e1");
      // An answer to a replayed ping would have been sent before the call's answer was read:
      // give its POST time to arrive.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(pingAnswers, 1, "the replayed e1 was skipped: its request answered once");
    } finally {
      await c.close();
    }
  });

  test("past the budget (3 resumptions without a new event): the call fails naming the interruption", async () => {
    const { text, c } = await call("t", ["cut", "cut", "cut", "cut"]);
    try {
      await assert.rejects(
        text,
        /Request "tools\/call" to server "cut" failed: the event stream was interrupted before the answer \(.*\) and 3 resumptions brought no new event/,
      );
      assert.deepEqual(gets(), ["e1", "e1", "e1"]);
    } finally {
      await c.close();
    }
  });

  test("cut before any event with an id: nothing to resume from, the call fails at once", async () => {
    const { text, c } = await call("no-id", []);
    try {
      await assert.rejects(text, /the event stream was interrupted before the answer/);
      assert.deepEqual(gets(), []);
    } finally {
      await c.close();
    }
  });
});
