// deno-lint-ignore-file require-await
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError } from "../lib/util/errors.ts";
import { AttemptError, backoffDelay, parseRetryAfter, withRetry } from "../lib/llm/retry.ts";
import { sleep } from "../lib/util/time.ts";
import { loadConfig } from "../lib/config/config.ts";
import { createModel } from "../lib/llm/model.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";

const noWait = (waits: number[]) => (ms: number) => {
  waits.push(ms);
  return Promise.resolve();
};

describe("LLM retries (SPEC section 9)", () => {
  test("C24 retries retryable failures and succeeds, with growing jittered waits", async () => {
    const waits: number[] = [];
    let calls = 0;
    const result = await withRetry(async () => {
      calls++;
      if (calls < 4) throw new AttemptError("overloaded_error: Overloaded", { status: 529, retryable: true });
      return "ok";
    }, { provider: "Anthropic", sleep: noWait(waits) });
    assert.equal(result, "ok");
    assert.equal(calls, 4);
    assert.equal(waits.length, 3);
    assert.ok(waits[0]! >= 400 && waits[0]! <= 600, `first wait ${waits[0]}`);
    assert.ok(waits[1]! > waits[0]! && waits[2]! > waits[1]!, `waits grow: ${waits}`);
  });

  test("C24 gives up after 4 attempts with an error naming the status and the provider's text", async () => {
    let calls = 0;
    const error = await withRetry(async () => {
      calls++;
      throw new AttemptError("overloaded_error: Overloaded", { status: 529, retryable: true });
    }, { provider: "Anthropic", sleep: noWait([]) }).catch((e: unknown) => e);
    assert.equal(calls, 4);
    assert.ok(error instanceof AgentError);
    assert.equal(error.code, "llm");
    assert.equal(error.status, 529);
    assert.equal(
      error.message,
      "Anthropic request failed with status 529 after 4 attempts: overloaded_error: Overloaded",
    );
  });

  test("a non-retryable failure is not retried", async () => {
    let calls = 0;
    const error = await withRetry(async () => {
      calls++;
      throw new AttemptError("invalid_request_error: bad", { status: 400, retryable: false });
    }, { provider: "OpenAI-compatible", sleep: noWait([]) }).catch((e: unknown) => e);
    assert.equal(calls, 1);
    assert.ok(error instanceof AgentError);
    assert.equal(error.message, "OpenAI-compatible request failed with status 400: invalid_request_error: bad");
  });

  test("any other error counts as a connection error and is retried", async () => {
    let calls = 0;
    const error = await withRetry(async () => {
      calls++;
      throw new TypeError("fetch failed");
    }, { provider: "Anthropic", sleep: noWait([]) }).catch((e: unknown) => e);
    assert.equal(calls, 4);
    assert.match(
      (error as Error).message,
      /^Anthropic request failed after 4 attempts: connection error: fetch failed/,
    );
  });

  test("retry-after is honoured when longer than the backoff, and onRetry is called before each wait", async () => {
    const waits: number[] = [];
    const infos: unknown[] = [];
    let calls = 0;
    await withRetry(async () => {
      if (++calls === 1) {
        throw new AttemptError("rate_limit_error: slow down", { status: 429, retryable: true, retryAfterMs: 2000 });
      }
      return 1;
    }, { provider: "Anthropic", sleep: noWait(waits), onRetry: (i) => infos.push(i) });
    assert.deepEqual(waits, [2000]);
    assert.deepEqual(infos, [{ attempt: 1, delayMs: 2000, reason: "status 429: rate_limit_error: slow down" }]);
  });

  test("a retry-after over 60 s is not waited for", async () => {
    let calls = 0;
    await assert.rejects(
      withRetry(async () => {
        calls++;
        throw new AttemptError("rate_limit_error: later", { status: 429, retryable: true, retryAfterMs: 3_600_000 });
      }, { provider: "Anthropic", sleep: noWait([]) }),
      /status 429/,
    );
    assert.equal(calls, 1);
  });

  test("aborting during the backoff wait rejects with an AbortError at once", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const run = withRetry(async () => {
      throw new AttemptError("api_error: boom", { status: 500, retryable: true, retryAfterMs: 30_000 });
    }, { provider: "Anthropic", signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(run, (e: Error) => e.name === "AbortError");
    assert.ok(Date.now() - started < 5000);
  });

  test("parseRetryAfter reads seconds, HTTP dates and retry-after-ms", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "2" }), now), 2000);
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), now), 5000);
    assert.equal(parseRetryAfter(new Headers({ "retry-after-ms": "250", "retry-after": "9" }), now), 250);
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "soon" }), now), undefined);
    assert.equal(parseRetryAfter(new Headers(), now), undefined);
  });

  test("backoff starts near 500 ms and is capped at 8 s", () => {
    assert.equal(backoffDelay(1, { random: () => 0.5 }), 500);
    assert.equal(backoffDelay(2, { random: () => 0.5 }), 1000);
    assert.equal(backoffDelay(10, { random: () => 0.99 }), 8000);
    assert.ok(backoffDelay(1, { random: () => 0 }) >= 400);
  });

  test("sleep rejects with AbortError when already aborted", async () => {
    await assert.rejects(sleep(10, AbortSignal.abort()), (e: Error) => e.name === "AbortError");
  });
});

describe("createModel passes a retry policy to the HTTP clients", () => {
  for (const provider of ["anthropic", "openai"] as const) {
    test(`${provider}: maxAttempts 2 makes two requests, not four`, async () => {
      const llm = await startFakeLlm({ responses: [{ status: 500 }, { status: 500 }, { text: "never" }] });
      try {
        const config = loadConfig({
          SPROUT_AGENT_PROVIDER: provider,
          ANTHROPIC_API_KEY: "k",
          ANTHROPIC_MODEL: "m",
          ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
          OPENAI_COMPAT_API_KEY: "k",
          OPENAI_COMPAT_MODEL: "m",
          OPENAI_COMPAT_BASE_URL: llm.openaiBaseUrl,
        }, () => "");
        const model = createModel(config, { retry: { maxAttempts: 2, baseDelayMs: 1 } });
        await assert.rejects(
          model.complete({ system: "", history: [{ role: "user", text: "hi" }], tools: [], maxOutputTokens: 100 }),
          /status 500 after 2 attempts/,
        );
        assert.equal(llm.requests.length, 2);
      } finally {
        await llm.close();
      }
    });
  }
});
