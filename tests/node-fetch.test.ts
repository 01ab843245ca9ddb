/**
 * lib/bridge/node-fetch.ts, the `fetch` over `node:http` that `cli.ts hook-bridge` uses under
 * Node, held to the runtime's own `fetch` on the same server: the same status, headers and
 * text; its body read by lib/http as a real body is (readBody, readSse), SSE events as they
 * arrive, a body past the 1 MiB queue read whole, a cancel that closes the connection, an abort
 * that rejects with the signal's reason.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import { nodeHttpFetch } from "../lib/bridge/node-fetch.ts";
import { readBody } from "../lib/http/body.ts";
import { readSse } from "../lib/http/sse.ts";

describe("nodeHttpFetch: the bridge's fetch under Node, against the runtime's fetch", () => {
  let server: Server;
  let base: string;
  /** Resolves when the server saw the SSE request's connection close. */
  let sseClosed: Promise<void> = Promise.resolve();
  /** Lets the SSE stream send its second event. */
  let sendSecond: () => void = () => {};
  before(async () => {
    server = createServer((req, res: ServerResponse) => {
      let body = "";
      req.setEncoding("utf8").on("data", (c: string) => (body += c));
      req.on("end", () => {
        if (req.url === "/json") {
          res.writeHead(200, { "content-type": "application/json", "x-echo": req.headers["x-test"] ?? "" });
          res.end(JSON.stringify({ method: req.method, body, length: req.headers["content-length"] ?? null }));
        } else if (req.url === "/missing") {
          res.writeHead(404, { "content-type": "text/plain" }).end("no such thing");
        } else if (req.url === "/big") {
          res.writeHead(200, { "content-type": "text/plain" });
          // 3 MiB in 64 KiB writes: past the 1 MiB the reader queues before it pauses.
          const chunk = "abcdefgh".repeat(8192);
          for (let i = 0; i < 48; i++) res.write(chunk);
          res.end("end");
        } else if (req.url === "/sse") {
          sseClosed = new Promise((resolve) => res.once("close", () => resolve()));
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write('event: message\ndata: {"n":1}\n\n');
          sendSecond = () => res.write('data: {"n":2}\n\n');
        } else if (req.url === "/hang") {
          // Never answers: the client's abort must end the request.
        } else res.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("status, headers, a string body and its text are what the runtime's fetch gets", async () => {
    const init = {
      method: "POST",
      headers: { "x-test": "é 1", "content-type": "application/json" },
      body: '{"a":"ü"}',
    };
    const ours = await nodeHttpFetch(`${base}/json`, init);
    const theirs = await fetch(`${base}/json`, init);
    assert.deepEqual([ours.status, ours.ok], [theirs.status, theirs.ok]);
    assert.equal(ours.headers.get("Content-Type"), theirs.headers.get("content-type"));
    assert.equal(ours.headers.get("x-missing"), null);
    const text = await ours.text();
    assert.equal(text, await theirs.text());
    assert.deepEqual(JSON.parse(text), { method: "POST", body: '{"a":"ü"}', length: "10" });
    const missing = await nodeHttpFetch(`${base}/missing`);
    assert.deepEqual([missing.status, missing.ok, await missing.text()], [404, false, "no such thing"]);
  });

  test("lib/http's readBody reads its body whole, past the 1 MiB it queues before pausing", async () => {
    const ours = await nodeHttpFetch(`${base}/big`);
    const text = await readBody(ours.body, { maxBytes: 8 << 20 });
    assert.equal(text.length, 48 * 65536 + 3);
    assert.equal(text, await (await fetch(`${base}/big`)).text());
  });

  test("readSse gets each event as it arrives, and a cancel closes the connection", async () => {
    const ours = await nodeHttpFetch(`${base}/sse`, { headers: { accept: "text/event-stream" } });
    const events = readSse(ours.body!);
    const first = await events.next();
    assert.equal(first.value?.data, '{"n":1}');
    sendSecond(); // sent only now: the first was read before the stream had more
    const second = await events.next();
    assert.equal(second.value?.data, '{"n":2}');
    await events.return(undefined); // the consumer stops: the body is cancelled
    await sseClosed;
  });

  test("an abort before or during the request rejects with the signal's reason", async () => {
    const early = new AbortController();
    early.abort(new Error("stopped early"));
    await assert.rejects(nodeHttpFetch(`${base}/json`, { signal: early.signal }), /stopped early/);
    const late = new AbortController();
    const pending = nodeHttpFetch(`${base}/hang`, { signal: late.signal });
    setTimeout(() => late.abort(new Error("gave up")), 50);
    await assert.rejects(pending, /gave up/);
    // Nothing listens: the socket's error.
    await assert.rejects(nodeHttpFetch("http://127.0.0.1:1/"), /ECONNREFUSED/);
  });
});
