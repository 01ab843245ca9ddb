/**
 * A `fetch` over `node:http` and `node:https`, for `cli.ts hook-bridge` under Node: Node's own
 * `fetch` (undici) costs a bridge process about 90 ms of wall time to load and tear down, a
 * host pays that on every event, and the MCP client needs only a small part of it (issue 24,
 * docs/PERFORMANCE.md). It does what lib/mcp/http.ts asks of `fetch`: a method, headers (a
 * plain object, or anything with `forEach`), a string body, an `AbortSignal`; the answer's
 * `status`, `ok`, `headers.get` and a streaming `body`, read as it arrives so SSE works, plus
 * `text()` and `json()`. The body is a `ReadableStream` in the part lib/http reads of one
 * (`getReader()` with `read`, `cancel` and `releaseLock`; `cancel()`), not a real one: Node's
 * web streams (`Readable.toWeb`) cost a bridge process about 6 ms to load. No redirects are
 * followed (the MCP client follows none), no cookies, no caches.
 * @module
 */

import { Buffer } from "node:buffer";
import type { IncomingMessage } from "node:http";

type HeaderSource = Record<string, string> | { forEach(cb: (value: string, name: string) => void): void };

/** The `Response` shape {@link nodeHttpFetch} resolves with. */
interface NodeResponse {
  status: number;
  ok: boolean;
  statusText: string;
  headers: { get(name: string): string | null };
  body: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

function headerObject(source: HeaderSource | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (source === undefined) return out;
  if (typeof (source as { forEach?: unknown }).forEach === "function") {
    (source as { forEach(cb: (value: string, name: string) => void): void }).forEach((value, name) => {
      out[name] = value;
    });
  } else Object.assign(out, source);
  return out;
}

/** One `read()` of {@link MessageBody}'s reader. */
type ReadResult = { done: false; value: Uint8Array } | { done: true; value: undefined };

/**
 * The part of a web `ReadableStream` that lib/http reads (`getReader()`: `read`, `cancel`,
 * `releaseLock`; and `cancel()`), over an `IncomingMessage`: chunks are queued as they arrive,
 * the message is paused while more than 1 MiB waits (backpressure), an error rejects the next
 * read, and a cancel destroys the message and ends the reads.
 */
class MessageBody {
  #message: IncomingMessage;
  #queue: Uint8Array[] = [];
  #queued = 0;
  #ended = false;
  #error: unknown;
  #waiting: { resolve: (r: ReadResult) => void; reject: (e: unknown) => void } | undefined;

  constructor(message: IncomingMessage) {
    this.#message = message;
    message.on("data", (chunk: Uint8Array) => {
      if (this.#waiting !== undefined) {
        const waiting = this.#waiting;
        this.#waiting = undefined;
        waiting.resolve({ done: false, value: chunk });
        return;
      }
      this.#queue.push(chunk);
      this.#queued += chunk.length;
      if (this.#queued > 1 << 20) message.pause();
    });
    message.once("end", () => this.#finish());
    message.once("error", (error) => this.#finish(error));
    // A destroyed message (a cancel, a reset) ends without "end".
    message.once("close", () => this.#finish(message.complete ? undefined : new Error("The response was cut off")));
  }

  #finish(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) return;
    if (error === undefined) waiting.resolve({ done: true, value: undefined });
    else waiting.reject(error);
  }

  read(): Promise<ReadResult> {
    const chunk = this.#queue.shift();
    if (chunk !== undefined) {
      this.#queued -= chunk.length;
      if (this.#queued <= 1 << 20 && this.#message.isPaused()) this.#message.resume();
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.#ended) {
      return this.#error === undefined
        ? Promise.resolve({ done: true, value: undefined })
        : Promise.reject(this.#error);
    }
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }));
  }

  cancel(): Promise<void> {
    this.#queue = [];
    this.#queued = 0;
    this.#finish();
    this.#message.destroy();
    return Promise.resolve();
  }

  getReader(): { read: () => Promise<ReadResult>; cancel: () => Promise<void>; releaseLock: () => void } {
    return { read: () => this.read(), cancel: () => this.cancel(), releaseLock: () => {} };
  }
}

function response(message: IncomingMessage): NodeResponse {
  const status = message.statusCode ?? 0;
  const stream = new MessageBody(message);
  const body = stream as unknown as ReadableStream<Uint8Array>;
  const text = async () => {
    const chunks: Uint8Array[] = [];
    for (let r = await stream.read(); !r.done; r = await stream.read()) chunks.push(r.value);
    return Buffer.concat(chunks).toString("utf8");
  };
  return {
    status,
    ok: status >= 200 && status < 300,
    statusText: message.statusMessage ?? "",
    headers: {
      get(name: string) {
        const value = message.headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
      },
    },
    body,
    text,
    json: async () => JSON.parse(await text()),
  };
}

/**
 * `fetch(url, init)` over `node:http`/`node:https` (see the module doc). Rejects with the
 * socket's error, or with the signal's reason (an `AbortError`) when it aborts.
 * @example const r = await nodeHttpFetch("http://127.0.0.1:8787/health"); await r.text();
 */
export async function nodeHttpFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = typeof input === "string" ? new URL(input) : input instanceof URL ? input : new URL(input.url);
  const signal = init.signal ?? undefined;
  const builtin: { request: typeof import("node:http").request } = url.protocol === "https:"
    ? await import("node:https")
    : await import("node:http");
  return await new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const body = typeof init.body === "string" ? init.body : undefined;
    const headers = headerObject(init.headers as HeaderSource | undefined);
    if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
    const request = builtin.request(url, { method: init.method ?? "GET", headers }, (message) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal !== undefined) {
        signal.addEventListener("abort", () => message.destroy(signal.reason as Error), { once: true });
      }
      resolve(response(message) as unknown as Response);
    });
    const onAbort = () => {
      request.destroy(signal?.reason as Error);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    request.on("error", (error) => {
      signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    request.end(body);
  });
}
