/**
 * One host hook event through our hook servers: read the event, connect the servers
 * `MCP_HOOK_SERVERS` enables (stdio or Streamable HTTP, through the agent's own registry),
 * run the point through the agent's own {@link HookRunner} (allowlist, timeout, fail-open,
 * typed answers), keep the `_Stop` budget per host session, and answer in the host's words.
 * It never throws and never asks for exit status 2: every failure of its own fails open.
 * @module
 */

import { type Config, hooksEnabledFor, type HookServers, loadConfig } from "../config/config.ts";
import { HOOK_POINTS, type HookAgent, type HookMeta, type HookName } from "../hooks/points.ts";
import { HookRunner } from "../hooks/runner.ts";
import { createRegistry } from "../mcp/registry.ts";
import type { McpServerConfig, ToolRegistry } from "../mcp/types.ts";
import { type BridgeAnswer, combineResults, type HostOutput, hostOutput, noteText } from "./answers.ts";
import { type StopBudget, stopBudget } from "./budget.ts";
import { type BridgeEvent, detectHost, HOST_TITLES, type HostName, readEvent } from "./hosts.ts";

/** Options of {@link runBridge}. */
export interface BridgeOptions {
  /** `--host`; default: detected from the payload ({@link detectHost}). */
  host?: HostName;
  /** `--event`: the host's event name when the payload carries none (Copilot CLI's camelCase events). */
  event?: string;
  /** The host's event JSON, as read from stdin. */
  input: string;
  /** The MCP servers (`--mcp-config FILE`, else `./.mcp.json`); may throw, which fails open. */
  servers: () => McpServerConfig[];
  /** The environment: `MCP_HOOK_SERVERS`, `SPROUT_AGENT_*`, and the stdio servers' pass-through variables. */
  env: Record<string, string | undefined>;
  /** Reads a file for `loadConfig` (`SPROUT_AGENT_SYSTEM_PROMPT_FILE`). */
  readFile: (path: string) => string;
  /** The bridge's folder, absolute: stdio servers start there, and `_meta.cwd` is it when the payload names none. */
  cwd: string;
  /** The folder of the `_Stop` budget files (`bridgeStateDir`); `undefined`: nothing is kept. */
  stateDir: string | undefined;
  /** For HTTP servers; default the global `fetch`. */
  fetch?: typeof fetch;
}

/** What {@link runBridge} found, with the host's answer. */
export interface BridgeResult extends HostOutput {
  /** The host, when it was known or detected. */
  host?: HostName;
  /** The hook point the event fired, if any. */
  hook?: HookName;
}

const PREFIX = "sprout-agent hook-bridge";

/**
 * A failure of the bridge's own: nothing blocks, and the person is told (stderr, and
 * `systemMessage` where the host shows one). `prefix` names the command (the proxy's own).
 */
export function failOpen(host: HostName | undefined, message: string, prefix = PREFIX): BridgeResult {
  const line = `${prefix}: ${message} (failing open: nothing was blocked)`;
  const json = host === undefined || host === "copilot" ? undefined : { systemMessage: line };
  return { ...(host === undefined ? {} : { host }), json, stderr: [line] };
}

const errorText = (error: unknown) => error instanceof Error ? error.message : String(error);

/**
 * Answers one host event (see the module doc). Resolves with the JSON to print (or none) and
 * the lines for stderr; the command exits 0 whatever happens.
 * @example
 * const out = await runBridge({ host: "claude", input: stdinText, servers: () => loadServers(undefined).servers,
 *   env: process.env, readFile, cwd: process.cwd(), stateDir: bridgeStateDir(process.env) });
 * if (out.json !== undefined) console.log(JSON.stringify(out.json));
 */
export async function runBridge(options: BridgeOptions): Promise<BridgeResult> {
  let payload: unknown;
  try {
    payload = JSON.parse(options.input);
  } catch (error) {
    return failOpen(options.host, `Cannot read the hook event on stdin: ${errorText(error)}`);
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    return failOpen(options.host, "Cannot read the hook event on stdin: it is not a JSON object");
  }
  const record = payload as Record<string, unknown>;
  const host = options.host ?? detectHost(record);
  if (host === undefined) {
    return failOpen(undefined, "Cannot tell which agent sent the hook event: give --host claude|codex|gemini|copilot");
  }
  let event: BridgeEvent;
  try {
    event = readEvent(host, record, options.event);
  } catch (error) {
    return failOpen(host, errorText(error));
  }
  const hook = event.hook;
  if (hook === undefined) return { host, json: undefined, stderr: [] };
  let config: Config;
  let servers: McpServerConfig[];
  try {
    config = loadConfig(options.env, options.readFile);
    servers = options.servers().filter((s) => hooksEnabledFor(config.hookServers, s.name));
  } catch (error) {
    return failOpen(host, errorText(error));
  }
  if (servers.length === 0) return { host, hook, json: undefined, stderr: [] };

  // The _Stop budget of this host session (SPEC 7.2), kept in a file across hook processes;
  // a subagent's stops (_SubagentStop) have a budget of their own (SPEC 13.4, CASES C39).
  const budget: StopBudget | undefined = event.sessionId === undefined ? undefined : stopBudget(
    options.stateDir,
    host,
    event.sessionId,
    hook !== undefined && HOOK_POINTS[hook].agent === "subagent" ? "subagent" : "",
  );
  const refused = budgetRefusal(host, event, config, budget);
  if (refused !== undefined) return refused;

  const notes: string[] = [];
  const { registry, failures } = await createRegistry(servers, {
    sessionId: event.sessionId ?? `hook-bridge-${crypto.randomUUID()}`,
    initTimeoutMs: config.mcpInitTimeoutMs,
    maxLineBytes: config.maxLineBytes,
    // The bridge's own folder (the host starts it in the project): the payload's `cwd` is only
    // reported, so a stdio server never depends on a path the host merely names.
    cwd: options.cwd,
    env: options.env,
    onWarning: (message) => notes.push(message),
    // One connection per hook process: a round trip saved is a host's event faster (issue 24).
    prefetchTools: true,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  try {
    for (const f of failures) notes.push(f.message);
    // A required guard that could not start does not pass silently at a tool point (SPEC 3.1).
    const requiredDown = failures.filter((f) => servers.find((s) => s.name === f.server)?.required === true);
    const sessionId = event.sessionId;
    return await fireEvent({
      host,
      event,
      config,
      registry,
      budget,
      cwd: options.cwd,
      notes,
      requiredDown,
      ...(sessionId === undefined
        ? {}
        : { forgetSubagentBudget: () => stopBudget(options.stateDir, host, sessionId, "subagent").forget() }),
    });
  } catch (error) {
    return failOpen(host, errorText(error));
  } finally {
    await registry.close();
  }
}

/**
 * What {@link budgetRefusal} and {@link fireEvent} need: the event read, the configuration, the
 * servers' registry and the session's `_Stop` budget. Shared by the command bridge (a
 * registry per event, the budget in a file) and the MCP proxy (one registry and the budget in
 * memory for the life of the host session).
 */
export interface FireOptions {
  host: HostName;
  event: BridgeEvent;
  config: Config;
  registry: ToolRegistry;
  /** `undefined`: nowhere to count (no session id). */
  budget: StopBudget | undefined;
  /** Forgets the session's subagent-stop budget too, at `SessionEnd`; default nothing. */
  forgetSubagentBudget?: () => void;
  /** `_meta.cwd` when the event names none. */
  cwd: string;
  /** Warnings so far (servers that could not start), put first in the answer's notes. */
  notes: string[];
  /** Required servers that could not start: at a tool point they deny the call. */
  requiredDown: ReadonlyArray<{ server: string; message: string }>;
  /**
   * Which servers' hooks run; default `config.hookServers` (`MCP_HOOK_SERVERS`). The proxy
   * passes its one server: naming it is what enables its hooks.
   */
  allow?: HookServers;
  /**
   * The runner to call the hooks through, on `registry`; default a new one (the command
   * bridge: one event per process). The proxy keeps one for the host session, so a server's
   * consecutive timeouts count across events and the second kills it (SPEC 4.4).
   */
  runner?: HookRunner;
}

/**
 * The `_Stop` budget's answer before any server is called: `undefined` to go on, or the
 * accepted stop (nothing on stdout, a line on stderr) when the budget is used up, when it is
 * 0, or when there is nowhere to count it and this stop follows a stop hook's block.
 */
export function budgetRefusal(
  host: HostName,
  event: BridgeEvent,
  config: Config,
  budget: StopBudget | undefined,
): BridgeResult | undefined {
  const hook = event.hook;
  if (hook === undefined || HOOK_POINTS[hook].effect !== "objection") return undefined;
  const max = config.stopMaxRejections;
  const used = budget?.used() ?? 0;
  if (max === 0) return { host, hook, json: undefined, stderr: [] };
  if (used >= max) {
    return {
      host,
      hook,
      json: undefined,
      stderr: [
        `${PREFIX}: Stop-hook budget exhausted (${used} of ${max} objections used in this ${
          HOST_TITLES[host]
        } session): the stop is accepted without calling _Stop`,
      ],
    };
  }
  if (budget?.kept !== true && event.stopHookActive) {
    // Nowhere to count: one objection per stop, never one on top of a stop hook's continuation.
    return {
      host,
      hook,
      json: undefined,
      stderr: [`${PREFIX}: no session id or state folder to keep the _Stop budget in: this stop is accepted`],
    };
  }
  return undefined;
}

/**
 * Fires `event`'s hook point on the registry's servers through the agent's own
 * {@link HookRunner}, combines the answers, spends the `_Stop` budget on an objection (and
 * forgets it at `SessionEnd`), and answers in the host's words. Call {@link budgetRefusal}
 * first. Throws only what the runner throws (the caller fails open).
 */
export async function fireEvent(o: FireOptions): Promise<BridgeResult> {
  const { host, event, config, registry, budget } = o;
  const hook = event.hook;
  if (hook === undefined) return { host, json: undefined, stderr: [...o.notes] };
  const effect = HOOK_POINTS[hook].effect;
  const notes = [...o.notes];
  const done = (answer: BridgeAnswer): BridgeResult => ({ host, hook, ...hostOutput(host, event.event, hook, answer) });
  if (effect === "deny" && o.requiredDown.length > 0) {
    const names = o.requiredDown.map((f) => f.server).join(", ");
    const why = o.requiredDown.map((f) => f.message).join("; ");
    return done({
      permission: {
        decision: "deny",
        reason: noteText(hook, names, `the required guard did not answer, so the call was not run (${why})`),
      },
      notes,
    });
  }
  const max = config.stopMaxRejections;
  const used = budget?.used() ?? 0;
  const session = event.source !== undefined || effect === "log";
  const meta: HookMeta = {
    round: session ? 0 : 1,
    rejectionsUsed: used,
    rejectionsLeft: Math.max(0, max - used),
    cwd: event.cwd ?? o.cwd,
    lastAssistantText: event.lastAssistantText,
    afterObjection: effect === "objection" && event.stopHookActive,
    prompt: session ? 0 : 1,
  };
  if (event.source !== undefined) meta.source = event.source;
  if (event.toolCall !== undefined) meta.toolCall = event.toolCall;
  if (event.toolResult !== undefined) meta.toolResult = event.toolResult;
  // The subagent points get the child's name; the host sends no task (SPEC 13.4's `task` is "").
  if (HOOK_POINTS[hook].agent === "subagent") {
    meta.subagent = { name: event.agent?.name ?? "", task: "" };
  }
  // A call about a subagent names it, as the agent's own children's calls do (SPEC 13.4): the
  // host's agent id and type; depth 1 (a host's subagents spawn none); no tool call id.
  const agent: HookAgent | undefined = event.agent === undefined
    ? undefined
    : { session: event.sessionId ?? "", id: event.agent.id, name: event.agent.name, depth: 1, toolCallId: "" };
  const runner = o.runner ??
    new HookRunner({ registry, allow: o.allow ?? config.hookServers, timeoutMs: config.hookTimeoutMs });
  const results = await runner.run(hook, meta, {
    ...(event.toolCall === undefined ? {} : { toolName: event.toolCall.name }),
    ...(agent === undefined ? {} : { agent }),
  });
  const answer = combineResults(hook, results, (server) => registry.isRequired(server));
  answer.notes.unshift(...notes);
  if (effect === "objection" && answer.block !== undefined && budget !== undefined) {
    try {
      budget.spend();
    } catch (error) {
      answer.notes.push(`Cannot keep the _Stop budget in ${JSON.stringify(budget.file)}: ${errorText(error)}`);
      if (event.stopHookActive) delete answer.block;
    }
  }
  if (effect === "log") {
    budget?.forget();
    o.forgetSubagentBudget?.();
  }
  return done(answer);
}
