/**
 * A `fetch` over `node:http` and `node:https`, for `cli.ts hook-bridge` under Node: Node's own
 * `fetch` (undici) costs a bridge process about 90 ms of wall time to load and tear down, a
 * host pays that on every event, and the MCP client needs only a small part of it (issue 24,
 * docs/PERFORMANCE.md). It does what lib/mcp/http.ts asks of `fetch`: a method, headers (a
 * plain object, or anything with `forEach`), a string body, an `AbortSignal`; the answer's
 * `status`, `ok`, `headers.get` and a streaming `body` (a web `ReadableStream` from
 * `Readable.toWeb`, read as it arrives, so SSE works), plus `text()` and `json()`. No redirects
 * are followed (the MCP client follows none), no cookies, no caches.
 * @module
 */

import { Buffer } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";

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

function response(message: IncomingMessage): NodeResponse {
  const status = message.statusCode ?? 0;
  const body = Readable.toWeb(message) as unknown as ReadableStream<Uint8Array>;
  const text = async () => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
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
