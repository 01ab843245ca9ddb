/**
 * Fakes for hook authors and for our tests (real wire bytes, not mocks): a recording fake LLM HTTP
 * server that speaks both the Anthropic Messages API and the Chat Completions API, streams
 * SSE like the real ones, and rejects with 400 every request the real API would reject.
 * Runs under Node, Bun and Deno (`node:http` on 127.0.0.1, a free port).
 * @module
 */

import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { setImmediate } from "node:timers";
import type { Socket } from "node:net";
import { strictTemplateProblems, validateAnthropicRequest, validateOpenAiRequest } from "./validate.ts";
import {
  anthropicEvents,
  anthropicJson,
  type FakeReply,
  type FakeStreamError,
  openAiEvents,
  openAiJson,
  type Piece,
  streamErrorEvents,
  type StreamShape,
} from "./wire.ts";

export type { FakeReply, FakeStreamError, StreamShape } from "./wire.ts";

export {
  EMPTY_ASSISTANT_ERROR,
  type OpenAiValidateOptions,
  strictTemplateProblems,
  TEMPLATE_ALTERNATION_ERROR,
  TEMPLATE_ID_ERROR,
  validateAnthropicRequest,
  validateOpenAiRequest,
} from "./validate.ts";
export { createScriptedModel, type ScriptedOptions, type ScriptTurn } from "../llm/scripted.ts";
export type {
  HistoryItem,
  LlmRequest,
  LlmResponse,
  Model,
  ProviderStop,
  ResultBlock,
  ToolCall,
  ToolDef,
  Usage,
} from "../conversation/types.ts";

/**
 * An HTTP error: `retryAfter` in seconds (or an HTTP date); `body` replaces the API-style error body.
 * @example
 * const llm = await startFakeLlm({ responses: [{ status: 429, retryAfter: 1 }, { text: "ok after the retry" }] });
 */
export interface FakeHttpError {
  /** The HTTP status sent, for example 429, 500 or 529. */
  status: number;
  /** Sent as the `retry-after` header: seconds, or an HTTP date string. */
  retryAfter?: number | string;
  /** Sent as the `retry-after-ms` header, in milliseconds (the agent prefers it to `retry-after`). */
  retryAfterMs?: number;
  /** Sent as the JSON body instead of the wire's usual error object for `status`. */
  body?: unknown;
}

/**
 * What the fake answers to one request.
 * @example
 * const turns: FakeTurn[] = [{ status: 529 }, { drop: true }, { text: "third time lucky" }];
 */
export type FakeTurn = FakeReply | FakeHttpError | FakeStreamError | { drop: true };

/**
 * One request the fake received.
 * @example
 * const [first] = llm.requests;
 * console.log(first?.wire, first?.body["model"], first?.rejected ?? "accepted");
 */
export interface RecordedRequest {
  /** Which API the path addressed: `anthropic` for `…/v1/messages`, `openai` for `…/chat/completions`. */
  wire: "anthropic" | "openai";
  /** The request's URL path, query string removed. */
  path: string;
  /** The parsed JSON body; `{}` when the body was not JSON. */
  body: Record<string, unknown>;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** Why it was rejected with 400 (the first problem), when it was. */
  rejected?: string;
  /** `Date.now()` when the request arrived. */
  at: number;
}

/**
 * Options of {@link startFakeLlm}.
 * @example
 * const llm = await startFakeLlm({ responses: (request, index) => ({ text: `answer ${index} on ${request.wire}` }), requireKey: false });
 */
export interface FakeLlmOptions {
  /** Answers in order (rejected requests take none), or a function of the request. */
  responses: FakeTurn[] | ((request: RecordedRequest, index: number) => FakeTurn);
  /** Defaults for every normal response. */
  stream?: StreamShape;
  /**
   * Answer 401 to a request without a key (`x-api-key` or `Authorization`), as the hosted APIs
   * do. Default true; false acts like a local server (Ollama, llama.cpp) that needs none.
   */
  requireKey?: boolean;
  /**
   * On the Chat Completions wire, also refuse what a strict chat template refuses, as a
   * server rendering a Mistral-family model does (llama.cpp `--jinja`, vLLM, LM Studio): a
   * tool-call id that is not exactly 9 letters and digits, two user (or assistant) turns in a
   * row, an empty assistant message ({@link strictTemplateProblems}). Answers 400 with the template's error text in
   * vLLM's error body `{"object": "error", "message", "type": "BadRequestError", "param":
   * null, "code": 400}` (current llama.cpp answers 500 `server_error` with the same text
   * after `Jinja Exception: `; a 400 is used so the agent fails at once instead of retrying).
   * The fake's own tool-call ids are then 9 letters and digits too, as such a server's are.
   * Default false.
   */
  strictTemplate?: boolean;
}

/**
 * A running fake LLM server.
 * @example
 * const llm: FakeLlm = await startFakeLlm({ responses: [{ text: "hi" }] });
 * const model = createOpenAiModel({ apiKey: "k", model: "m", baseUrl: llm.openaiBaseUrl });
 * await llm.close();
 */
export interface FakeLlm {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** For `ANTHROPIC_BASE_URL`. */
  anthropicBaseUrl: string;
  /** For `OPENAI_COMPAT_BASE_URL` (`…/v1`). */
  openaiBaseUrl: string;
  /** Every request, in arrival order, rejected ones included. */
  requests: RecordedRequest[];
  /** Stops the server and drops open connections. */
  close(): Promise<void>;
}

/**
 * Starts the fake on 127.0.0.1 at a free port.
 * @example
 * const llm = await startFakeLlm({ responses: [{ toolCalls: [{ name: "fs__read", arguments: { path: "a" } }] }, { text: "done" }] });
 * // ANTHROPIC_BASE_URL=llm.anthropicBaseUrl … then assert on llm.requests
 * await llm.close();
 */
export async function startFakeLlm(options: FakeLlmOptions): Promise<FakeLlm> {
  const requests: RecordedRequest[] = [];
  // A served Mistral-family model mints 9-alphanumeric ids, the only ones its template accepts back.
  const wireOptions = { mistralIds: options.strictTemplate === true };
  const sockets = new Set<Socket>();
  let served = 0;
  let ids = 0;
  const next = (request: RecordedRequest): FakeTurn | undefined => {
    const index = served++;
    return typeof options.responses === "function" ? options.responses(request, index) : options.responses[index];
  };
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { type: "api_error", message: `(fake) ${String(error)}` } });
      else res.destroy();
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const wire = path.endsWith("/v1/messages")
      ? "anthropic"
      : path.endsWith("/chat/completions")
      ? "openai"
      : undefined;
    const raw = await readBody(req);
    if (req.method !== "POST" || wire === undefined) {
      sendJson(res, 404, { error: { type: "not_found_error", message: `(fake) no route for ${req.method} ${path}` } });
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k.toLowerCase()] = v;
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      body = {};
    }
    const recorded: RecordedRequest = { wire, path, body, headers, at: Date.now() };
    requests.push(recorded);
    const problems = wire === "anthropic" ? validateAnthropicRequest(body) : validateOpenAiRequest(body);
    const templateProblems = wire === "openai" && options.strictTemplate === true ? strictTemplateProblems(body) : [];
    const auth = wire === "anthropic" ? headers["x-api-key"] : headers["authorization"];
    if ((auth === undefined || auth === "") && options.requireKey !== false) {
      recorded.rejected = wire === "anthropic" ? "x-api-key header is required" : "You didn't provide an API key.";
      sendError(
        res,
        wire,
        401,
        wire === "anthropic" ? "authentication_error" : "invalid_request_error",
        recorded.rejected,
      );
      return;
    }
    if (problems.length > 0) {
      recorded.rejected = problems[0] as string;
      sendError(res, wire, 400, "invalid_request_error", recorded.rejected);
      return;
    }
    if (templateProblems.length > 0) {
      recorded.rejected = templateProblems[0] as string;
      sendJson(res, 400, {
        object: "error",
        message: recorded.rejected,
        type: "BadRequestError",
        param: null,
        code: 400,
      });
      return;
    }
    const turn = next(recorded);
    if (turn === undefined) {
      recorded.rejected = `(fake) no response left: the fake was given ${
        Array.isArray(options.responses) ? options.responses.length : "no"
      } responses`;
      sendError(res, wire, 500, "api_error", recorded.rejected);
      return;
    }
    if ("drop" in turn) {
      req.socket.destroy();
      return;
    }
    if ("status" in turn) {
      const h: Record<string, string> = {};
      if (turn.retryAfter !== undefined) h["retry-after"] = String(turn.retryAfter);
      if (turn.retryAfterMs !== undefined) h["retry-after-ms"] = String(turn.retryAfterMs);
      if (turn.body !== undefined) sendJson(res, turn.status, turn.body, h);
      else {
        const [type, message] = defaultError(turn.status);
        sendError(res, wire, turn.status, type, message, h);
      }
      return;
    }
    const stream = body["stream"] === true;
    const shape: StreamShape = { ...options.stream, ...("streamError" in turn ? {} : pickShape(turn)) };
    if ("streamError" in turn) {
      await sendStream(res, streamErrorEvents(wire, turn, String(body["model"] ?? "")), shape);
      return;
    }
    const idBase = ++ids;
    if (!stream) {
      sendJson(
        res,
        200,
        wire === "anthropic" ? anthropicJson(turn, body, idBase) : openAiJson(turn, body, idBase, wireOptions),
      );
      return;
    }
    await sendStream(
      res,
      wire === "anthropic" ? anthropicEvents(turn, body, idBase) : openAiEvents(turn, body, idBase, wireOptions),
      shape,
    );
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    anthropicBaseUrl: url,
    openaiBaseUrl: `${url}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function pickShape(turn: FakeReply): StreamShape {
  const shape: StreamShape = {};
  if (turn.splitBytes !== undefined) shape.splitBytes = turn.splitBytes;
  if (turn.crlf !== undefined) shape.crlf = turn.crlf;
  if (turn.pauseMs !== undefined) shape.pauseMs = turn.pauseMs;
  if (turn.cutAfterFirstDelta !== undefined) shape.cutAfterFirstDelta = turn.cutAfterFirstDelta;
  return shape;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

function sendError(
  res: ServerResponse,
  wire: "anthropic" | "openai",
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = wire === "anthropic"
    ? { type: "error", error: { type, message }, request_id: "req_fake" }
    : { error: { message, type, param: null, code: null } };
  sendJson(res, status, body, headers);
}

function defaultError(status: number): [string, string] {
  if (status === 529) return ["overloaded_error", "Overloaded"];
  if (status === 429) return ["rate_limit_error", "Rate limited"];
  if (status === 401) return ["authentication_error", "invalid x-api-key"];
  if (status === 403) return ["permission_error", "Forbidden"];
  if (status === 404) return ["not_found_error", "Not found"];
  if (status >= 500) return ["api_error", "Internal server error"];
  return ["invalid_request_error", "Invalid request"];
}

/**
 * Waits `ms`, or less when the response closes first (the client went away, or `close()`
 * dropped the connection): a long pause then holds no timer that keeps the process alive.
 */
function pauseUnlessClosed(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on("close", done);
  });
}

async function sendStream(res: ServerResponse, pieces: Piece[], shape: StreamShape): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const eol = shape.crlf === true ? "\r\n" : "\n";
  for (const piece of pieces) {
    if ("pause" in piece) {
      if (shape.cutAfterFirstDelta === true) {
        await new Promise((r) => setTimeout(r, 20));
        res.socket?.destroy();
        return;
      }
      if (shape.pauseMs !== undefined && shape.pauseMs > 0) await pauseUnlessClosed(res, shape.pauseMs);
      if (res.destroyed) return;
      continue;
    }
    const data = typeof piece.data === "string" ? piece.data : JSON.stringify(piece.data);
    const text = `${piece.event === undefined ? "" : `event: ${piece.event}${eol}`}data: ${data}${eol}${eol}`;
    if (shape.splitBytes === true) {
      for (const byte of Buffer.from(text, "utf8")) {
        if (res.destroyed) return;
        res.write(Buffer.from([byte]));
        await new Promise((r) => setImmediate(r));
      }
    } else res.write(text);
  }
  res.end();
}
