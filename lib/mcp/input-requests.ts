/**
 * Input requests (SPEC section 10): what a server asks of the client while it serves a call —
 * `elicitation/create` (a question for the person), `sampling/createMessage` (a completion
 * from the agent's model) and `roots/list` (the session's folders) — through one path for both
 * eras, as the official v2 client does: a 2026-07-28 server answers a call with
 * `resultType: "input_required"` and `inputRequests`, answered by retrying the call with
 * `inputResponses` and the `requestState` echoed byte for byte (at most
 * {@link MAX_INPUT_ROUNDS} rounds); a legacy server sends the same methods as JSON-RPC
 * requests of its own, answered as they come. The {@link InputHandler} the host gives decides
 * what is declared in the client capabilities and how each request is answered.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { asObject } from "../util/json.ts";
import { sleep } from "../util/time.ts";

/** Most `input_required` rounds one call may take before it fails (the official v2 SDK's default). */
export const MAX_INPUT_ROUNDS = 10;

/** The tasks extension's identifier (declared in every modern request's client capabilities). */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** The methods a server may ask the client to answer. */
export const INPUT_METHODS: readonly string[] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/**
 * One elicitation, as the server sent it: a form built from `requestedSchema` (an object schema
 * of flat string, number, integer, boolean and enum properties), or a URL for the person to open
 * (`elicitationId` names it for the server's later `notifications/elicitation/complete`).
 * @example
 * const form: ElicitationRequest = { mode: "form", message: "Your GitHub login?", requestedSchema: { type: "object", properties: { login: { type: "string" } }, required: ["login"] } };
 */
export type ElicitationRequest =
  | { mode: "form"; message: string; requestedSchema: Record<string, unknown> }
  | { mode: "url"; message: string; url: string; elicitationId: string };

/**
 * The person's answer, with MCP's meanings: `accept` (with the form's `content`; for a URL, the
 * person agreed to open it), `decline` (they said no), `cancel` (they dismissed it without
 * choosing). Nothing of `content` is ever logged.
 * @example
 * const answer: ElicitationResult = { action: "accept", content: { login: "octocat" } };
 */
export type ElicitationResult =
  | { action: "accept"; content?: Record<string, string | number | boolean | string[]> }
  | { action: "decline" }
  | { action: "cancel" };

/**
 * A sampling answer: the model's text (MCP `CreateMessageResult`; `stopReason` `endTurn`,
 * `maxTokens` or another the model gave).
 * @example
 * const sample: SamplingResult = { role: "assistant", content: { type: "text", text: "Paris" }, model: "scripted", stopReason: "endTurn" };
 */
export interface SamplingResult {
  /** Always `assistant`. */
  role: "assistant";
  /** The completion; text only. */
  content: { type: "text"; text: string };
  /** The model that answered (its display name). */
  model: string;
  /** Why it stopped. */
  stopReason?: string;
}

/** Where an input request comes from, handed to each {@link InputHandler} callback. */
export interface InputContext {
  /** The server's configured name. */
  server: string;
  /** The tool (bare name) whose call asked, when known. */
  tool?: string | undefined;
  /** The agent's tool call id (the LLM's call), when known: ACP ties an elicitation to it. */
  callId?: string | undefined;
  /**
   * Aborted when the answer is no longer wanted: the call was cancelled or timed out, the server
   * withdrew its request (`notifications/cancelled`) or the connection closed. A callback should
   * stop waiting for the person then; what it resolves with is ignored.
   */
  signal: AbortSignal;
}

/**
 * How the host answers a server's input requests (SPEC section 10). Each callback that is
 * present is declared to servers in the client capabilities (`elicitation` with
 * {@link InputHandler.elicitationModes}, `sampling`, `roots`); a request for one that is absent
 * is refused with a clear error. `createAgent` builds one from `AgentOptions.elicit` (default:
 * decline with a warning, as nobody can answer), `AgentOptions.sampling` (the agent's own model,
 * off by default) and the session's `cwd` (the root); the CLI and the ACP server pass their
 * `elicit`.
 * @example
 * const input: InputHandler = {
 *   elicit: async () => ({ action: "decline" }),
 *   roots: [{ uri: "file:///work/project", name: "project" }],
 * };
 */
export interface InputHandler {
  /**
   * Asks the person (form or URL mode).
   * @throws anything: the request is answered with an error naming it (legacy), or the call
   *   fails with it (2026-07-28)
   */
  elicit?: ((request: ElicitationRequest, context: InputContext) => Promise<ElicitationResult>) | undefined;
  /** The elicitation modes declared; default both `form` and `url`. A request in another mode is declined. */
  elicitationModes?: readonly ("form" | "url")[] | undefined;
  /**
   * Answers `sampling/createMessage` with `params` as the server sent them (`messages`,
   * `systemPrompt`, `maxTokens`…).
   * @throws anything: as for `elicit`
   */
  sample?: ((params: Record<string, unknown>, context: InputContext) => Promise<SamplingResult>) | undefined;
  /** The answer to `roots/list`: `file://` URIs, each with an optional name. */
  roots?: readonly { uri: string; name?: string }[] | undefined;
  /** Rounds of `input_required` one call may take; default {@link MAX_INPUT_ROUNDS}. */
  maxRounds?: number | undefined;
}

/**
 * The client capabilities `input` lets the agent declare: `elicitation` (`form`, `url`),
 * `sampling`, `roots`, and in the modern era the tasks extension. Nothing else.
 */
export function clientCapabilities(input: InputHandler | undefined, modern: boolean): Record<string, unknown> {
  const capabilities: Record<string, unknown> = {};
  if (input?.elicit !== undefined) {
    const modes = input.elicitationModes ?? ["form", "url"];
    const elicitation: Record<string, unknown> = {};
    for (const mode of modes) elicitation[mode] = {};
    if (modes.length > 0) capabilities.elicitation = elicitation;
  }
  if (input?.sample !== undefined) capabilities.sampling = {};
  if (input?.roots !== undefined) capabilities.roots = {};
  if (modern) capabilities.extensions = { [TASKS_EXTENSION]: {} };
  return capabilities;
}

/**
 * A call whose tool timeout ran out while the server waited for the client (a person still
 * answering, a task still running): the server answered throughout, so it is not stopped for
 * this timeout (`serverAnswered`).
 */
export class ClientWaitTimeoutError extends AgentError {
  /** Set: the server is not at fault. */
  readonly serverAnswered = true;
  constructor(message: string) {
    super("timeout", message);
  }
}

/** An input request that cannot be answered: a JSON-RPC error for a legacy server, a failed call otherwise. */
export class InputRequestError extends AgentError {
  /** The JSON-RPC error code a legacy server is answered with. */
  readonly rpcCode: number;
  constructor(message: string, rpcCode = -32603) {
    super("mcp", message);
    this.rpcCode = rpcCode;
  }
}

/**
 * Answers one input request (`method` with `params`) through `input`.
 * @throws {InputRequestError} for a method the handler cannot answer (-32601: not declared, or
 *   sampling off), malformed params (-32602), or a callback that failed (-32603)
 */
export async function answerInputRequest(
  method: string,
  params: unknown,
  input: InputHandler | undefined,
  context: InputContext,
): Promise<Record<string, unknown>> {
  const p = asObject(params) ?? {};
  const from = `server "${context.server}"${context.tool === undefined ? "" : ` (tool "${context.tool}")`}`;
  if (method === "roots/list") {
    if (input?.roots === undefined) {
      throw new InputRequestError(`${from} asked for roots/list, which is not declared`, -32601);
    }
    return { roots: input.roots.map((r) => ({ ...r })) };
  }
  if (method === "sampling/createMessage") {
    if (input?.sample === undefined) {
      throw new InputRequestError(
        `${from} asked for sampling/createMessage, which is off: the operator turns it on with SPROUT_AGENT_SAMPLING=on (answered by the agent's own model, capped by SPROUT_AGENT_SAMPLING_MAX_TOKENS)`,
        -32601,
      );
    }
    if (!Array.isArray(p.messages)) {
      throw new InputRequestError(`${from} sent sampling/createMessage without a messages list`, -32602);
    }
    try {
      return { ...(await input.sample(p, context)) };
    } catch (error) {
      if (error instanceof InputRequestError) throw error;
      throw new InputRequestError(`Sampling for ${from} failed: ${messageOf(error)}`);
    }
  }
  if (method === "elicitation/create") {
    const request = elicitationOf(p);
    if (typeof request === "string") throw new InputRequestError(`${from} sent elicitation/create ${request}`, -32602);
    const modes = input?.elicitationModes ?? ["form", "url"];
    if (input?.elicit === undefined || !modes.includes(request.mode)) return { action: "decline" };
    try {
      return elicitationAnswer(await input.elicit(request, context));
    } catch (error) {
      throw new InputRequestError(`Elicitation for ${from} failed: ${messageOf(error)}`);
    }
  }
  throw new InputRequestError(`Method not found: ${method}`, -32601);
}

/** A well-formed answer, whatever the callback returned: an unknown action is a cancel. */
function elicitationAnswer(result: ElicitationResult): Record<string, unknown> {
  if (result?.action === "accept") {
    const content = asObject((result as { content?: unknown }).content);
    return content === undefined ? { action: "accept" } : { action: "accept", content };
  }
  if (result?.action === "decline") return { action: "decline" };
  return { action: "cancel" };
}

/** The elicitation in `params`, or what is wrong with it. */
function elicitationOf(p: Record<string, unknown>): ElicitationRequest | string {
  const message = typeof p.message === "string" ? p.message : "";
  const mode = p.mode ?? "form";
  if (mode === "url") {
    if (typeof p.url !== "string" || p.url === "") return "in URL mode without a url";
    let url: URL;
    try {
      url = new URL(p.url);
    } catch {
      return `with a url that is not a URL: ${JSON.stringify(p.url.slice(0, 200))}`;
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") return `with a url that is not http(s): ${url.protocol}`;
    return {
      mode: "url",
      message,
      url: p.url,
      elicitationId: typeof p.elicitationId === "string" ? p.elicitationId : "",
    };
  }
  if (mode !== "form") return `in an unknown mode ${JSON.stringify(mode)}`;
  const schema = asObject(p.requestedSchema);
  if (schema === undefined) return "without a requestedSchema object";
  return { mode: "form", message, requestedSchema: schema };
}

/** What one call's `input_required` rounds need. */
export interface InputRoundsOptions {
  /** The server's name and the call's context, for the handler and for errors. */
  context: InputContext;
  /** The request's method (`tools/call`), for errors. */
  method: string;
  /** The handler; absent: every request is refused. */
  input: InputHandler | undefined;
  /** Sends the request again with these extra params (`inputResponses`, `requestState`); resolves with its raw result. */
  retry: (extra: Record<string, unknown>) => Promise<Record<string, unknown>>;
  /** Waits before retrying a round that carried only `requestState` (load shedding); default 250 ms. */
  pause?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Drives a call through its `input_required` rounds: answers every input request of the
 * round (concurrently), retries with `inputResponses` and the `requestState` echoed unchanged
 * (on a fresh request id), and resolves with the first result that is not `input_required`.
 * @throws {AgentError} `mcp` past `maxRounds` rounds (`… still required input after 10
 *   rounds`), or when an input request could not be answered; whatever `retry` throws
 */
export async function runInputRounds(
  first: Record<string, unknown>,
  options: InputRoundsOptions,
): Promise<Record<string, unknown>> {
  const max = options.input?.maxRounds ?? MAX_INPUT_ROUNDS;
  const { context } = options;
  let result = first;
  for (let round = 1; result.resultType === "input_required"; round++) {
    if (round > max) {
      throw new AgentError(
        "mcp",
        `Request "${options.method}" to server "${context.server}" still required input after ${max} rounds (the most one call may take)`,
      );
    }
    context.signal.throwIfAborted();
    const requests = asObject(result.inputRequests) ?? {};
    const state = result.requestState;
    if (Object.keys(requests).length === 0 && typeof state !== "string") {
      throw new AgentError(
        "mcp",
        `Request "${options.method}" to server "${context.server}" failed: an input_required result with neither inputRequests nor requestState`,
      );
    }
    const responses = await answerAll(requests, options.input, context);
    if (Object.keys(requests).length === 0) await (options.pause ?? sleep)(250, context.signal);
    // Answers given after a cancel or the timeout are not sent.
    context.signal.throwIfAborted();
    const extra: Record<string, unknown> = {};
    if (Object.keys(responses).length > 0) extra.inputResponses = responses;
    if (typeof state === "string") extra.requestState = state;
    result = await options.retry(extra);
  }
  return result;
}

/**
 * Answers a map of input requests (`{key: {method, params}}`) into `{key: result}`.
 * @throws {AgentError} `mcp` naming the first request that could not be answered
 */
export async function answerAll(
  requests: Record<string, unknown>,
  input: InputHandler | undefined,
  context: InputContext,
): Promise<Record<string, unknown>> {
  const entries = await Promise.all(
    Object.entries(requests).map(async ([key, value]) => {
      const request = asObject(value);
      const method = typeof request?.method === "string" ? request.method : "";
      try {
        return [key, await answerInputRequest(method, request?.params, input, context)] as const;
      } catch (error) {
        throw new AgentError(
          "mcp",
          `Cannot answer input request "${key}" (${method || "no method"}): ${messageOf(error)}`,
          {
            cause: error,
          },
        );
      }
    }),
  );
  return Object.fromEntries(entries);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
