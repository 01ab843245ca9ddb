/**
 * lib/util/output.ts in process: the writer that counts unflushed writes (issue 9, "Output is never
 * lost") against streams that flush late, never or fail, and the console redirection of the ACP
 * mode. The end-to-end proof under each runtime is tests/e2e-output.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { redirectConsole } from "../lib/util/console.ts";
import { FLUSH_TIMEOUT_MS, trackedOutput } from "../lib/util/output.ts";

/** A stream that holds each write's callback until `release()`, as a full pipe does. */
function latePipe() {
  const written: string[] = [];
  const callbacks: Array<(error?: Error | null) => void> = [];
  let onError: ((error: Error) => void) | undefined;
  return {
    written,
    stream: {
      write(chunk: string, callback?: (error?: Error | null) => void) {
        written.push(chunk);
        if (callback) callbacks.push(callback);
        return false;
      },
      on(_event: "error", listener: (error: Error) => void) {
        onError = listener;
      },
    },
    release: (error?: Error) => {
      for (const cb of callbacks.splice(0)) cb(error ?? null);
    },
    releaseOne: () => callbacks.shift()?.(null),
    fail: (error: Error) => onError?.(error),
  };
}

describe("trackedOutput", () => {
  test("flush waits until the stream has called back for every write", async () => {
    const pipe = latePipe();
    const out = trackedOutput(pipe.stream);
    out.write("a\n");
    out.write("b\n");
    assert.equal(out.pending, 2);
    let flushed: boolean | undefined;
    const flushing = out.flush(10_000).then((ok) => (flushed = ok));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(flushed, undefined, "flush resolved with writes still pending");
    pipe.release();
    assert.equal(await flushing, true);
    assert.equal(out.pending, 0);
    assert.deepEqual(pipe.written, ["a\n", "b\n"]);
  });

  test("flush gives up after its timeout when the reader never reads, resolving false", async () => {
    const pipe = latePipe();
    const out = trackedOutput(pipe.stream);
    out.write("never read\n");
    const started = Date.now();
    assert.equal(await out.flush(50), false);
    assert.ok(Date.now() - started < 1000);
    assert.equal(FLUSH_TIMEOUT_MS, 5000);
  });

  test("the timeout counts from the last progress: a slow reader that keeps reading gets everything", async () => {
    const pipe = latePipe();
    const out = trackedOutput(pipe.stream);
    for (let i = 0; i < 10; i++) out.write(`${i}\n`);
    // One write completes every 50 ms: 500 ms in all, past the 300 ms timeout, but never 300 ms
    // idle (a timer may fire late on a busy machine: 250 ms of slack per step).
    const slowReader = (async () => {
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 50));
        pipe.releaseOne();
      }
    })();
    const started = performance.now();
    assert.equal(await out.flush(300), true);
    assert.ok(performance.now() - started > 300, "the flush outlasted its timeout");
    await slowReader;
  });

  test("an EPIPE closes it: onClosed once, flush resolves at once, later writes are dropped", async () => {
    const pipe = latePipe();
    const closed: string[] = [];
    const out = trackedOutput(pipe.stream, { onClosed: (e) => closed.push(e.message) });
    out.write("x\n");
    const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE" });
    pipe.fail(epipe);
    pipe.release(epipe);
    assert.equal(out.closed, true);
    assert.equal(await out.flush(10_000), true);
    out.write("dropped\n");
    assert.deepEqual(pipe.written, ["x\n"]);
    assert.deepEqual(closed, ["write EPIPE"]);
  });

  test("a write that throws closes it instead of throwing", () => {
    const out = trackedOutput({
      write(_chunk: string, _callback?: () => void): boolean {
        throw new Error("write after end");
      },
    });
    assert.doesNotThrow(() => out.write("x"));
    assert.equal(out.closed, true);
  });

  test("a sink whose write takes no callback counts as flushed at once", async () => {
    const lines: string[] = [];
    const out = trackedOutput({ write: (chunk: string) => lines.push(chunk) });
    out.write("one\n");
    assert.equal(out.pending, 0);
    assert.equal(await out.flush(10), true);
    assert.deepEqual(lines, ["one\n"]);
  });
});

describe("redirectConsole", () => {
  test("log, info, debug, dir, table, group and count go to the sink, formatted; restore puts them back", () => {
    const original = console.log;
    const lines: string[] = [];
    const restore = redirectConsole((line) => lines.push(line));
    try {
      console.log("hello %s", "world", 42);
      console.info("info");
      console.debug("debug");
      console.dir({ a: [1, 2] });
      console.table([{ a: 1 }]);
      console.group("group label");
      console.count("n");
      console.count("n");
    } finally {
      restore();
    }
    assert.equal(console.log, original);
    assert.deepEqual(lines, [
      "hello world 42\n",
      "info\n",
      "debug\n",
      "{ a: [ 1, 2 ] }\n",
      "[ { a: 1 } ]\n",
      "group label\n",
      "n: 1\n",
      "n: 2\n",
    ]);
  });
});
