/**
 * The LLM request timeout is an idle deadline (lib/llm/http.ts): a long answer that keeps
 * streaming is never cut, a stalled one is. The server here is a web-standard `Response`
 * whose body streams on a timer: a fake `fetch`, not a mock of our code.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createAnthropicModel } from "../lib/llm/anthropic.ts";

/** A `fetch` answering with an Anthropic SSE stream: `deltas` text deltas, `gapMs` apart, or a stall after the first. */
function slowStream(deltas: number, gapMs: number, stall = false): typeof fetch {
  return () => {
    const enc = new TextEncoder();
    const event = (type: string, data: unknown) => enc.encode(`event: ${type}\ndata: ${JSON.stringify({ type, ...data as object })}\n\n`);
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
        controller.enqueue(event("message_start", { message: { id: "m", type: "message", role: "assistant", content: [], usage: { input_tokens: 5, output_tokens: 0 } } }));
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
        controller.enqueue(event("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: deltas } }));
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
