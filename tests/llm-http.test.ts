/**
 * The LLM request timeout is an idle deadline (lib/llm/http.ts): a long answer that keeps
 * streaming is never cut, a stalled one is. The server here is a web-standard `Response`
 * whose body streams on a timer: a fake `fetch`, not a mock of our code.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError } from "../lib/util/errors.ts";
import { createAnthropicModel } from "../lib/llm/anthropic.ts";
import { createOpenAiModel } from "../lib/llm/openai.ts";
import { BUFFERED_ON_LOOPBACK, startFloodServer } from "./helpers/flood-server.ts";
import type { Flood } from "./helpers/flood-server.ts";

/** A `fetch` answering with an Anthropic SSE stream: `deltas` text deltas, `gapMs` apart, or a stall after the first. */
function slowStream(deltas: number, gapMs: number, stall = false): typeof fetch {
  return () => {
    const enc = new TextEncoder();
    const event = (type: string, data: unknown) =>
      enc.encode(`event: ${type}\ndata: ${JSON.stringify({ type, ...data as object })}\n\n`);
    let wait: ReturnType<typeof setTimeout> | undefined;
    let cancelled = false;
    let wake: () => void = () => {};
    const body = new ReadableStream<Uint8Array>({
      // The client cancels the body when it gives up: end the stall then.
      cancel() {
        cancelled = true;
        clearTimeout(wait);
        wake();
      },
      async start(controller) {
        controller.enqueue(
          event("message_start", {
            message: {
              id: "m",
              type: "message",
              role: "assistant",
              content: [],
              usage: { input_tokens: 5, output_tokens: 0 },
            },
          }),
        );
        controller.enqueue(event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
        for (let i = 0; i < deltas; i++) {
          await new Promise<void>((r) => {
            wake = r;
            wait = setTimeout(r, i === 1 && stall ? 60_000 : gapMs);
          });
          if (cancelled) return;
          controller.enqueue(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: `${i} ` } }));
        }
        controller.enqueue(event("content_block_stop", { index: 0 }));
        controller.enqueue(
          event("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: deltas } }),
        );
        controller.enqueue(event("message_stop", {}));
        controller.close();
      },
    });
    return Promise.resolve(new Response(body, { headers: { "content-type": "text/event-stream" } }));
  };
}

const request = { system: "s", history: [{ role: "user" as const, text: "hi" }], tools: [], maxOutputTokens: 100 };

describe("LLM request timeout (SPROUT_AGENT_LLM_TIMEOUT_SECS)", () => {
  test("a stream that keeps sending is not cut, though it lasts longer than the timeout", async () => {
    const model = createAnthropicModel({ apiKey: "k", model: "m", timeoutMs: 400, fetch: slowStream(8, 150) });
    const started = Date.now();
    const reply = await model.complete(request);
    assert.ok(Date.now() - started > 1000, "the whole answer took longer than the timeout");
    assert.equal(reply.text, "0 1 2 3 4 5 6 7 ");
  });

  test("a stream that stalls longer than the timeout fails with a timeout, after its retries", async () => {
    const model = createAnthropicModel({
      apiKey: "k",
      model: "m",
      timeoutMs: 300,
      fetch: slowStream(3, 10, true),
      retry: { baseDelayMs: 10, maxDelayMs: 20 },
    });
    await assert.rejects(model.complete(request), /timed out after 300 ms without data/);
  });
});

describe("LLM response bodies are bounded (lib/llm/http.ts, lib/http/body.ts)", () => {
  const MiB = 1024 * 1024;
  // What the server gets onto the wire once the client has read 4 MiB and stopped.
  const READ_AND_BUFFERED = 4 * MiB + BUFFERED_ON_LOOPBACK;

  /** Runs one request against `flood` and returns the error and the server's record. */
  async function against(flood: Flood) {
    const server = await startFloodServer(() => flood);
    try {
      const model = createOpenAiModel({
        apiKey: "k",
        model: "m",
        baseUrl: `${server.url}/v1`,
        timeoutMs: 20_000,
        retry: { baseDelayMs: 1, maxDelayMs: 1 },
      });
      const started = performance.now();
      const error = await model.complete(request).then(() => undefined, (e: unknown) => e);
      const failedAt = performance.now();
      const record = server.records[0]!;
      // The socket closes as soon as the body is cancelled (allow for the runtime's event loop).
      for (let i = 0; i < 100 && record.closedAt === undefined; i++) await new Promise((r) => setTimeout(r, 10));
      return {
        error,
        record,
        attempts: server.records.length,
        ms: failedAt - started,
        closeMs: (record.closedAt ?? Infinity) - failedAt,
      };
    } finally {
      await server.close();
    }
  }

  test("an endless JSON body is cancelled at 4 MiB: one attempt, a clear error, the socket closed, little sent", async () => {
    const { error, record, attempts, closeMs } = await against({ contentType: "application/json", prefix: '{"id":"' });
    assert.ok(error instanceof AgentError, String(error));
    assert.equal(
      error.message,
      "OpenAI-compatible request failed: the response body (application/json) is larger than 4194304 bytes; the rest was not read",
    );
    assert.equal(attempts, 1, "not retried");
    assert.equal(record.ended, false);
    assert.ok(record.bytes < READ_AND_BUFFERED, `server sent ${record.bytes} bytes`);
    assert.ok(closeMs < 1000, `socket closed ${closeMs} ms after the error`);
  });

  test("a body of the wrong content type (an endless HTML page) is not read: a clear error naming it, the socket closed", async () => {
    const { error, record, attempts, closeMs } = await against({
      contentType: "text/html; charset=utf-8",
      prefix: "<!doctype html><html>",
    });
    assert.ok(error instanceof AgentError, String(error));
    assert.equal(
      error.message,
      'OpenAI-compatible request failed: unexpected content type "text/html; charset=utf-8" (HTTP 200; expected text/event-stream or application/json); the body was not read: check the base URL',
    );
    assert.equal(attempts, 1, "not retried");
    // Not read at all: only what the kernel holds on loopback left the server (8.8 MB was seen
    // under load, so the bound is the buffers', not a guess below them), far below the flood.
    assert.ok(record.bytes < BUFFERED_ON_LOOPBACK, `server sent ${record.bytes} bytes`);
    assert.ok(closeMs < 1000, `socket closed ${closeMs} ms after the error`);
  });

  test("an SSE line that never ends is cut at 4 MiB; an endless error body is read only up to 64 KiB", async () => {
    const sse = await against({ contentType: "text/event-stream", prefix: "data: " });
    assert.ok(sse.error instanceof AgentError, String(sse.error));
    assert.equal(
      sse.error.message,
      "OpenAI-compatible request failed: an SSE event is larger than 4194304 bytes; the rest was not read",
    );
    assert.equal(sse.attempts, 1, "not retried");
    assert.equal(sse.record.ended, false);
    assert.ok(sse.record.bytes < READ_AND_BUFFERED, `server sent ${sse.record.bytes} bytes`);
    assert.ok(sse.closeMs < 1000, `socket closed ${sse.closeMs} ms after the error`);

    const failing = await against({ status: 400, contentType: "text/plain", prefix: "Bad request: " });
    assert.ok(failing.error instanceof AgentError, String(failing.error));
    assert.match(failing.error.message, /^OpenAI-compatible request failed with status 400: Bad request: x{400}/);
    assert.ok(failing.record.bytes < READ_AND_BUFFERED, `server sent ${failing.record.bytes} bytes`);
    assert.ok(failing.closeMs < 1000, `socket closed ${failing.closeMs} ms after the error`);
  });
});
