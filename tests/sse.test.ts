import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readSse, type SseEvent, SseParser } from "../lib/http/sse.ts";

const enc = new TextEncoder();

function parseAll(chunks: string[]): SseEvent[] {
  const p = new SseParser();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return out;
}

function byteStream(bytes: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      const next = bytes[i++];
      if (next === undefined) controller.close();
      else controller.enqueue(next);
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>, signal?: AbortSignal): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(stream, signal)) out.push(e);
  return out;
}

const SAMPLE = "event: a\ndata: one\ndata: two\n\n: a comment\nid: 7\ndata: héllo 🌱\n\nretry: 1500\ndata: x\n\n";
const EXPECTED: SseEvent[] = [
  { event: "a", data: "one\ntwo", id: "" },
  { event: "message", data: "héllo 🌱", id: "7" },
  { event: "message", data: "x", id: "7", retry: 1500 },
];

describe("SSE parser", () => {
  test("parses events, multi-line data, comments, id and retry fields", () => {
    assert.deepEqual(parseAll([SAMPLE]), EXPECTED);
  });

  test("gives the same events when the text is split at every character", () => {
    assert.deepEqual(parseAll([...SAMPLE]), EXPECTED);
  });

  test("accepts CRLF line ends, also split between CR and LF", () => {
    const crlf = SAMPLE.replaceAll("\n", "\r\n");
    assert.deepEqual(parseAll([crlf]), EXPECTED);
    assert.deepEqual(parseAll([...crlf]), EXPECTED);
  });

  test("accepts CR-only line ends", () => {
    assert.deepEqual(parseAll([SAMPLE.replaceAll("\n", "\r")]), EXPECTED);
    assert.deepEqual(parseAll([...SAMPLE.replaceAll("\n", "\r")]), EXPECTED);
  });

  test("an empty chunk after a CR does not turn the next LF into an extra line", () => {
    // "data: a\r" | "" | "\n\n": the LF belongs to the CR; one blank line dispatches.
    assert.deepEqual(parseAll(["data: a\r", "", "\n", "\r\n"]), [{ event: "message", data: "a", id: "" }]);
    // Without the fix the lone LF would dispatch early and the CRLF would do nothing more.
    assert.deepEqual(parseAll(["data: a\r", "", "\ndata: b\n\n"]), [{ event: "message", data: "a\nb", id: "" }]);
  });

  test("drops a leading BOM, and an unterminated last event", () => {
    assert.deepEqual(parseAll(["\ufeffdata: a\n\ndata: never"]), [{ event: "message", data: "a", id: "" }]);
  });

  test("a field without a colon and an event with no data dispatch nothing", () => {
    assert.deepEqual(parseAll(["data\n\nevent: x\n\ndata: y\n\n"]), [
      { event: "message", data: "", id: "" },
      { event: "message", data: "y", id: "" },
    ]);
  });

  test("readSse decodes multi-byte characters split across chunks, at every byte", async () => {
    const bytes = enc.encode(SAMPLE);
    const chunks = [...bytes].map((b) => new Uint8Array([b]));
    assert.deepEqual(await collect(byteStream(chunks)), EXPECTED);
  });

  test("readSse with CRLF split at every byte and a BOM in bytes", async () => {
    const bytes = enc.encode("\ufeff" + SAMPLE.replaceAll("\n", "\r\n"));
    const chunks = [...bytes].map((b) => new Uint8Array([b]));
    assert.deepEqual(await collect(byteStream(chunks)), EXPECTED);
  });

  test("readSse rejects when the signal aborts during a read, instead of ending quietly", async () => {
    const controller = new AbortController();
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode("data: first\n\n"));
      },
    });
    const seen: string[] = [];
    const run = (async () => {
      for await (const e of readSse(stream, controller.signal)) {
        seen.push(e.data);
        setTimeout(() => controller.abort(), 10);
      }
    })();
    await assert.rejects(run, (e: Error) => e.name === "AbortError");
    assert.deepEqual(seen, ["first"]);
  });

  test("readSse cancels the body when the consumer stops early", async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode("data: a\n\ndata: b\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const _ of readSse(stream)) break;
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(cancelled, true);
  });
});
