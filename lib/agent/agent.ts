/**
 * The front door: {@link createAgent} builds a ready agent (one session, its model and its MCP
 * servers, one session id for all) from plain options (`lib/agent/options.ts`);
 * `agentOptionsFromEnv` (`lib/agent/from-env.ts`) reads those options from the environment.
 * `cli.ts` and `lib/acp/server.ts` are built on the two.
 * @module
 */

import process from "node:process";
import { abortError, AgentError } from "../util/errors.ts";
import { agentConfig, type AgentOptions, inProcessHooks, isModel, modelFrom, serverList } from "./options.ts";
import type { AgentEvent } from "../conversation/events.ts";
import { hookSetupWarnings } from "../hooks/check.ts";
import { AgentSession, type PromptOptions, type PromptRun } from "./loop.ts";
import { continueTrace, inSpan } from "../util/trace.ts";
import { createRegistry, type RegistryFailure } from "../mcp/registry.ts";
import type { ToolRegistry } from "../mcp/types.ts";
import type { HistoryItem } from "../conversation/types.ts";
import { configSecrets } from "../util/redact.ts";
import { optionKeys } from "./from-env.ts";
import { restoreSession, type SessionCounters, type SessionStore, type SessionWriter } from "../sessions/records.ts";
import { Transcript } from "../sessions/transcript.ts";
import type { Subagents } from "./subagents.ts";
import { agentInput } from "./input.ts";

/**
 * A ready agent: one conversation (history, `_Stop` budget, compaction count) with its model
 * and its connected MCP servers.
 * @example
 * const agent: Agent = await createAgent({ model: { provider: "scripted", turns: [{ text: "hi" }] } });
 * for (const f of agent.failures) console.warn(f.message);
 * const run = agent.prompt("hello");
 * for await (const event of run) console.log(event.type);
 * await agent.close();
 */
export interface Agent {
  /** The session id every server saw as `_meta["sprout-agent/session"]`. */
  readonly sessionId: string;
  /**
   * The servers that could not start, in configuration order, each with a message naming it
   * (`Cannot start server "x": …`). They stay out of the session; the CLI prints them as
   * warnings, the ACP server fails `session/new` with them.
   */
  readonly failures: readonly RegistryFailure[];
  /** The conversation so far. */
  readonly history: readonly HistoryItem[];
  /**
   * The store the session's transcript goes to (SPEC section 12), or `undefined` when it is not
   * saved (`sessionStore: false`, or the default store could not be used).
   */
  readonly sessionStore: SessionStore | undefined;
  /** True while a prompt runs; a second concurrent `prompt` throws. */
  readonly busy: boolean;
  /**
   * Runs one prompt: iterate the returned run for its events, await `run.result` for the stop
   * reason and counts. `signal` cancels it (stop reason `cancelled`); `trace`
   * (`{traceparent, tracestate?}`) is the W3C trace context the prompt continues, else the
   * agent's `trace` option, else a new trace (SPEC section 10).
   * @throws (through `result`) {AgentError} `llm` when the LLM fails after its retries
   */
  prompt(text: string, options?: PromptOptions): PromptRun;
  /**
   * Ends the session: fires `_SessionEnd` (each call bounded by the hook timeout; its events go
   * to `onEvent`), then closes every MCP server (stdio children end, HTTP sessions are
   * deleted). Idempotent; never rejects.
   */
  close(): Promise<void>;
}

/**
 * Builds an agent: validates the options, creates the model, connects every MCP server
 * concurrently (each bounded by `mcpInitTimeoutMs`) and lists its tools. Asynchronous because
 * the servers connect here, so that failures are known before the first prompt and a prompt
 * never waits for a start-up. A server that cannot start does not fail the call: see
 * {@link Agent.failures}. Close the agent when done.
 * @throws {AgentError} code `config` naming the option for an invalid value (a missing model
 *   id or key, a limit out of range, a bad `mcpServers` entry); an `AbortError` when `signal`
 *   aborts while servers start (those started are closed)
 * @example
 * ```ts
 * const agent = await createAgent({
 *   model: { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: "sk-ant-…" },
 *   mcpServers: { mcpServers: { todo: { type: "http", url: "http://127.0.0.1:8787/mcp" } } },
 *   hookServers: ["todo"],
 *   maxRounds: 20,
 * });
 * try {
 *   const run = agent.prompt("Say hello");
 *   for await (const event of run) if (event.type === "text-delta") console.log(event.text);
 *   console.log((await run.result).stopReason);
 * } finally {
 *   await agent.close();
 * }
 * ```
 */
export async function createAgent(options: AgentOptions): Promise<Agent> {
  // Requests sent while the servers start carry the caller's trace, when given (SPEC 10).
  const parent = continueTrace(options.trace);
  return parent === undefined ? await startAgent(options) : await inSpan(parent, () => startAgent(options));
}

async function startAgent(options: AgentOptions): Promise<Agent> {
  const config = agentConfig(options);
  const model = isModel(options.model) ? options.model : await modelFrom(options.model, config, options.fetch);
  // Loaded only for in-process servers: it brings the MCP client, which an agent without
  // servers never loads (issue 21).
  const inProcess = options.inProcessServers === undefined
    ? undefined
    : (await import("../mcp/in-process.ts")).inProcessMcp(options.inProcessServers);
  const servers = [...serverList(options), ...(inProcess?.servers ?? [])];
  const hooks = inProcessHooks(options, servers);
  // Loaded only for an agent with subagents (issue 21: a start loads what its run needs).
  const sub = options.subagents === undefined && options.maxSubagentDepth === undefined
    ? undefined
    : await import("./subagents.ts");
  const subagents = sub?.checkSubagents(options.subagents) ?? [];
  const maxDepth = sub?.subagentDepth(options.maxSubagentDepth) ?? 0;
  const models = sub === undefined ? new Map() : await sub.subagentModels(options, subagents, config);
  if (options.resume !== undefined && options.sessionId !== undefined && options.resume !== options.sessionId) {
    throw new AgentError(
      "config",
      `Invalid sessionId: ${JSON.stringify(options.sessionId)} differs from resume (${JSON.stringify(options.resume)})`,
    );
  }
  const sessionId = options.resume ?? options.sessionId ?? crypto.randomUUID();
  // The transcript is claimed before any server starts: a session in use fails at once (SPEC 12).
  const kept = await claimTranscript(options, sessionId, servers);
  const starting = createRegistry(servers, {
    sessionId,
    input: agentInput({
      input: options.input,
      sampling: options.sampling,
      model,
      cwd: options.cwd ?? process.cwd(),
      warn: (message) => options.onWarning?.(message),
    }),
    initTimeoutMs: config.mcpInitTimeoutMs,
    maxLineBytes: config.maxLineBytes,
    ...(options.eraCache === undefined ? {} : { eraCache: options.eraCache }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
    ...(options.onServerStderr === undefined ? {} : { onServerStderr: options.onServerStderr }),
    ...(inProcess === undefined ? {} : { connect: inProcess.connect }),
  });
  let started: Awaited<typeof starting>;
  try {
    started = await abortable(starting, options.signal);
  } catch (error) {
    await kept?.transcript.close();
    throw error;
  }
  const { registry, failures } = started;
  // A required server (SPEC 3.1) that could not start fails the start: a guard must not pass silently.
  const missing = failures.filter((f) => servers.some((s) => s.name === f.server && s.required === true));
  if (missing.length > 0) {
    await registry.close().catch(() => {});
    await kept?.transcript.close();
    throw new AgentError(
      "mcp-connect",
      missing.map((f) => `Required server ${JSON.stringify(f.server)} could not start: ${f.message}`).join("; "),
    );
  }
  // A misspelt name in MCP_HOOK_SERVERS, or hooks nobody enabled, would otherwise go unseen.
  const listed = registry.hookTools();
  for (
    const warning of hookSetupWarnings({ configured: servers.map((s) => s.name), allow: config.hookServers, listed })
  ) {
    options.onWarning?.(warning);
  }
  // A subagent's tools entry that names nothing the agent has (a Claude Code file's `Read`, a
  // misspelt server) would leave the child without the tool, unseen (SPEC 13.1).
  if (sub !== undefined && subagents.some((d) => d.tools !== undefined) && options.onWarning !== undefined) {
    for (const warning of await sub.unmatchedToolWarnings(subagents, registry)) options.onWarning(warning);
  }
  // A new session exists from here on (its servers are up): it can be listed and resumed
  // before its first prompt, as an editor that creates a session and reconnects does.
  if (kept !== undefined && kept.restored === undefined) await kept.transcript.begin();
  const remembered = new Map<string, "allow" | "deny">();
  const cwd = options.cwd ?? process.cwd();
  // Each subagent is a tool of the session (SPEC 13.3); without any, the session is as before.
  const local: Subagents | undefined = sub === undefined || subagents.length === 0 ? undefined : new sub.Subagents({
    definitions: subagents,
    config,
    model,
    models,
    registry,
    sessionId,
    depth: 0,
    maxDepth,
    cwd,
    remembered,
    ...(hooks === undefined ? {} : { hooks }),
    ...(options.requestPermission === undefined ? {} : { ask: options.requestPermission }),
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(kept === undefined ? {} : { record: (run) => void kept.transcript.subagent(run) }),
  });
  const session = new AgentSession({
    config,
    model,
    registry: local?.view() ?? registry,
    remembered,
    ...(local === undefined ? {} : { localTools: local }),
    id: sessionId,
    cwd,
    hooks,
    ...(options.requestPermission === undefined ? {} : { ask: options.requestPermission }),
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(kept === undefined ? {} : { transcript: kept.transcript }),
    ...(kept?.restored === undefined ? {} : { restored: kept.restored }),
    ...(options.observe === undefined ? {} : { observe: options.observe }),
    ...(options.trace === undefined ? {} : { trace: options.trace }),
  });
  const onEvent = options.onEvent ?? (() => {});
  // The _SessionStart hook point (SPEC 7.5): servers connected, no prompt yet. A resumed
  // session fires it with its first prompt instead (SPEC 12.5): a load calls no hook.
  if (kept?.restored === undefined) {
    try {
      await session.start(onEvent);
    } catch (error) {
      await registry.close().catch(() => {});
      await kept?.transcript.close();
      throw error; // only a throwing onEvent gets here: hooks never throw
    }
  }
  return new ReadyAgent(session, registry, failures, onEvent, kept);
}

/**
 * Claims the session's transcript in the chosen store (default: the file store in the state
 * folder) and, for a resume, reads it back. A store that cannot be used for a new session
 * (no home folder, no permission to write) is a warning, and the session runs without one.
 * @throws {AgentError} `session` for a bad or unknown id, a session in use, an id that
 *   already has a transcript; any error of a store asked to resume
 */
async function claimTranscript(
  options: AgentOptions,
  id: string,
  servers: readonly { transport: { type: string; headers?: Record<string, string>; env?: Record<string, string> } }[],
): Promise<
  | { transcript: Transcript; store: SessionStore; restored?: { history: HistoryItem[]; counters: SessionCounters } }
  | undefined
> {
  const resume = options.resume !== undefined;
  let store: SessionStore | undefined;
  let writer: SessionWriter;
  try {
    store = await chosenStore(options.sessionStore);
    if (store === undefined) return undefined;
    writer = await store.claim(id, { existing: resume });
  } catch (error) {
    if (resume || (error instanceof AgentError && error.code === "session")) throw error;
    options.onWarning?.(`${(error as Error).message}: this session is not saved`);
    return undefined;
  }
  let restored: { history: HistoryItem[]; counters: SessionCounters } | undefined;
  let headed = true;
  if (resume) {
    try {
      const read = await store.read(id);
      if (read === undefined) throw new AgentError("session", `No session ${JSON.stringify(id)} in ${store.location}`);
      const back = restoreSession(read.records);
      for (const warning of [...read.warnings, ...back.warnings]) {
        options.onWarning?.(`Resuming session ${JSON.stringify(id)}: ${warning}`);
      }
      restored = { history: back.history, counters: back.counters };
      headed = back.header !== undefined;
    } catch (error) {
      await writer.close().catch(() => {});
      throw error;
    }
  }
  const transcript = new Transcript({
    writer,
    id,
    cwd: options.cwd ?? process.cwd(),
    secrets: configSecrets(optionKeys(options), servers),
    location: store.location,
    ...(restored === undefined ? {} : { written: restored.history, counters: restored.counters, headed }),
    ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return { transcript, store, ...(restored === undefined ? {} : { restored }) };
}

/** The store of `createAgent`'s `sessionStore` option: `false` none, default the file store. */
async function chosenStore(option: AgentOptions["sessionStore"]): Promise<SessionStore | undefined> {
  if (option === false) return undefined;
  if (option !== undefined) return option;
  // Loaded only when used: an agent without transcripts never loads the file code.
  const { fileSessionStore } = await import("../sessions/file-store.ts");
  return fileSessionStore();
}

class ReadyAgent implements Agent {
  readonly failures: readonly RegistryFailure[];
  readonly #session: AgentSession;
  readonly #registry: ToolRegistry;
  readonly #onEvent: (event: AgentEvent) => void;
  #closing: Promise<void> | undefined;
  readonly #transcript: Transcript | undefined;
  readonly sessionStore: SessionStore | undefined;

  constructor(
    session: AgentSession,
    registry: ToolRegistry,
    failures: RegistryFailure[],
    onEvent: (event: AgentEvent) => void,
    kept: { transcript: Transcript; store: SessionStore } | undefined,
  ) {
    this.#transcript = kept?.transcript;
    this.sessionStore = kept?.store;
    this.#session = session;
    this.#registry = registry;
    this.failures = failures;
    this.#onEvent = onEvent;
  }

  get sessionId(): string {
    return this.#session.id;
  }

  get history(): readonly HistoryItem[] {
    return this.#session.history;
  }

  get busy(): boolean {
    return this.#session.busy;
  }

  prompt(text: string, options: PromptOptions = {}): PromptRun {
    if (this.#closing !== undefined) throw new AgentError("usage", "Cannot start a prompt: the agent is closed");
    return this.#session.prompt(text, options);
  }

  close(): Promise<void> {
    // The _SessionEnd hook point (SPEC 7.5), while the servers still run.
    this.#closing ??= this.#session.end(this.#onEvent).catch(() => {}).then(() => this.#registry.close()).catch(
      () => {},
    ).then(() => this.#transcript?.close());
    return this.#closing;
  }
}

/** `promise`, or an `AbortError` once `signal` aborts; what `promise` opens is then closed. */
async function abortable(
  promise: Promise<{ registry: ToolRegistry; failures: RegistryFailure[] }>,
  signal: AbortSignal | undefined,
): Promise<{ registry: ToolRegistry; failures: RegistryFailure[] }> {
  if (signal === undefined) return await promise;
  let onAbort = () => {};
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    const started = await Promise.race([promise, aborted]);
    if (started !== "aborted") return started;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  void promise.then(({ registry }) => registry.close()).catch(() => {});
  throw abortError("Creating the agent was aborted");
}
