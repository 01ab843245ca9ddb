/**
 * The hosts the hook bridge serves (Claude Code, Codex, Gemini CLI, Copilot CLI) and how one
 * of their command-hook events, read from stdin, becomes one of our hook points with its
 * `_meta` (docs/BRIDGE.md lists every field and its source).
 * @module
 */

import { HOOK_POINTS, type HookName, type HookToolCall, MAX_HOOK_CONTEXT_TEXT_BYTES } from "../hooks/points.ts";
import { TRUNCATED_MARKER } from "../mcp/registry-tools.ts";
import { clampUtf8 } from "../util/utf8.ts";

/** The hosts, by the name `--host` takes. */
export type HostName = "claude" | "codex" | "gemini" | "copilot";

/** Every host, in the order the docs list them. */
export const HOSTS: readonly HostName[] = ["claude", "codex", "gemini", "copilot"];

/** What each host calls itself, for messages. */
export const HOST_TITLES: Readonly<Record<HostName, string>> = {
  claude: "Claude Code",
  codex: "Codex",
  gemini: "Gemini CLI",
  copilot: "Copilot CLI",
};

/**
 * Each host's events and the hook point each one fires; an event not listed here calls
 * nothing. Copilot CLI has two spellings: camelCase (`preToolUse`, camelCase fields) and the
 * VS Code compatible PascalCase one (`PreToolUse`, snake_case fields).
 */
export const HOST_EVENTS: Readonly<Record<HostName, Readonly<Record<string, HookName>>>> = {
  claude: {
    SessionStart: "_SessionStart",
    UserPromptSubmit: "_UserPromptSubmit",
    PreToolUse: "_PreToolUse",
    PostToolUse: "_PostToolUse",
    PostToolUseFailure: "_PostToolUse",
    Stop: "_Stop",
    SubagentStart: "_SubagentStart",
    SubagentStop: "_SubagentStop",
    PreCompact: "_PreCompact",
    SessionEnd: "_SessionEnd",
  },
  codex: {
    SessionStart: "_SessionStart",
    UserPromptSubmit: "_UserPromptSubmit",
    PreToolUse: "_PreToolUse",
    PostToolUse: "_PostToolUse",
    Stop: "_Stop",
    SubagentStart: "_SubagentStart",
    SubagentStop: "_SubagentStop",
    PreCompact: "_PreCompact",
    SessionEnd: "_SessionEnd",
  },
  gemini: {
    SessionStart: "_SessionStart",
    BeforeAgent: "_UserPromptSubmit",
    BeforeTool: "_PreToolUse",
    AfterTool: "_PostToolUse",
    AfterAgent: "_Stop",
    PreCompress: "_PreCompact",
    SessionEnd: "_SessionEnd",
  },
  copilot: {
    sessionStart: "_SessionStart",
    userPromptSubmitted: "_UserPromptSubmit",
    preToolUse: "_PreToolUse",
    postToolUse: "_PostToolUse",
    postToolUseFailure: "_PostToolUse",
    agentStop: "_Stop",
    subagentStop: "_SubagentStop",
    preCompact: "_PreCompact",
    sessionEnd: "_SessionEnd",
    SessionStart: "_SessionStart",
    UserPromptSubmit: "_UserPromptSubmit",
    PreToolUse: "_PreToolUse",
    PostToolUse: "_PostToolUse",
    PostToolUseFailure: "_PostToolUse",
    Stop: "_Stop",
    SubagentStop: "_SubagentStop",
    PreCompact: "_PreCompact",
    SessionEnd: "_SessionEnd",
  },
};

/** Gemini CLI's own event names, which no other host uses: they identify its payloads. */
const GEMINI_ONLY = new Set([
  "BeforeAgent",
  "AfterAgent",
  "BeforeTool",
  "AfterTool",
  "PreCompress",
  "BeforeModel",
  "AfterModel",
  "BeforeToolSelection",
]);

/** One host event, in our words. */
export interface BridgeEvent {
  /** The host that sent it. */
  host: HostName;
  /** The host's event name, as it came (`--event`, or the payload's). */
  event: string;
  /** Our hook point, or `undefined` when the event fires none. */
  hook: HookName | undefined;
  /** The host's session id: `_meta["sprout-agent/session"]` and the key of the `_Stop` budget. */
  sessionId: string | undefined;
  /** The host's working folder, absolute, when it sent one. */
  cwd: string | undefined;
  /** `_SessionStart`: `resume` for the host's resume (and Claude Code's `compact`), else `startup`. */
  source?: "startup" | "resume";
  /** The tool points: the call, its name qualified as `server__tool` (see {@link hostToolCall}). */
  toolCall?: HookToolCall;
  /** `_PostToolUse`: the result's text, cut to 4 KiB, and whether it failed. */
  toolResult?: { text: string; isError: boolean };
  /** The last assistant message the host sent (`_Stop`), cut to 4 KiB; `""` when none. */
  lastAssistantText: string;
  /** The host's `stop_hook_active`: this stop follows a block by a stop hook. */
  stopHookActive: boolean;
  /**
   * The subagent the event is about, when the host names one: Claude Code's and Codex's
   * `agent_id` and `agent_type` (sent with `SubagentStart` and `SubagentStop`, and with every
   * hook that fires inside a subagent), Copilot CLI's `agentName` (`subagentStop`). The hook
   * call then carries `_meta["sprout-agent/agent"]` (SPEC 13.4), as the agent's own child's do.
   */
  agent?: { id: string; name: string };
}

/** The value of `record[key]` when it is a non-empty string. */
function str(record: Record<string, unknown>, key: string): string | undefined {
  const v = record[key];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * Which host sent `payload` when `--host` is not given: a Gemini CLI event name
 * (`BeforeTool`, `AfterAgent`…) is Gemini CLI; a `turn_id` is Codex; any other
 * `hook_event_name` is Claude Code (whose shape Copilot CLI's PascalCase events share); a
 * camelCase `sessionId` is Copilot CLI. Returns `undefined` when none fits.
 * @example detectHost({ hook_event_name: "AfterAgent", session_id: "s" }) // "gemini"
 */
export function detectHost(payload: Record<string, unknown>): HostName | undefined {
  const name = payload.hook_event_name;
  if (typeof name === "string") {
    if (GEMINI_ONLY.has(name)) return "gemini";
    if (typeof payload.turn_id === "string") return "codex";
    return "claude";
  }
  if (typeof payload.sessionId === "string") return "copilot";
  return undefined;
}

/**
 * The event of a Copilot CLI camelCase payload that carries no event name, from its fields
 * (the printed settings pass `--event`, so this is only a fallback).
 */
function copilotEventOf(payload: Record<string, unknown>): string | undefined {
  if (payload.toolResult !== undefined) return "postToolUse";
  if (typeof payload.toolName === "string") {
    return typeof payload.error === "string" ? "postToolUseFailure" : "preToolUse";
  }
  if (typeof payload.prompt === "string") return "userPromptSubmitted";
  if (typeof payload.source === "string") return "sessionStart";
  if (typeof payload.trigger === "string") return "preCompact";
  if (typeof payload.reason === "string") return "sessionEnd";
  if (typeof payload.agentName === "string") return "subagentStop";
  if (typeof payload.stopReason === "string") return "agentStop";
  return undefined;
}

/**
 * The tool call a host names `name` with `input`, as our `toolCall` (SPEC 7.6): an MCP tool
 * (`mcp__server__tool`, the spelling of Claude Code, Codex and Gemini CLI) keeps its server and
 * bare name and is qualified `server__tool`, as the agent qualifies it; a built-in tool's server
 * is the host's name (`claude__Bash`, `gemini__run_shell_command`). Arguments that are a JSON
 * string are parsed; arguments that are not an object are passed as `{input}`.
 * @example hostToolCall("claude", "mcp__fs__write_file", { path: "a" }, "toolu_1").name // "fs__write_file"
 */
export function hostToolCall(host: HostName, name: string, input: unknown, id: string): HookToolCall {
  let args: unknown = input;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      // a plain string stays one
    }
  }
  const argsObject = typeof args === "object" && args !== null && !Array.isArray(args)
    ? args as Record<string, unknown>
    : args === undefined
    ? {}
    : { input: args };
  const mcp = /^mcp__(.+?)__(.+)$/.exec(name);
  const server = mcp?.[1] ?? host;
  const tool = mcp?.[2] ?? name;
  return { id, name: `${server}__${tool}`, server, tool, arguments: argsObject };
}

/** A tool result of any shape as text: a string as it is, an object's text fields, else its JSON. */
function resultText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  if (typeof value === "object" && !Array.isArray(value)) {
    const r = value as Record<string, unknown>;
    for (const key of ["llmContent", "textResultForLlm", "text_result_for_llm", "output", "stdout"]) {
      if (typeof r[key] === "string") return r[key] as string;
    }
  }
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return String(value);
  }
}

const cut = (text: string) => clampUtf8(text, MAX_HOOK_CONTEXT_TEXT_BYTES, TRUNCATED_MARKER);

/**
 * Reads one host event. `event` (`--event`) overrides the payload's event name; Copilot CLI's
 * camelCase payloads carry none. Throws `Error` with a message for people when the payload is
 * no event of `host` it can read.
 * @example
 * readEvent("claude", { hook_event_name: "SubagentStop", session_id: "s1", cwd: "/p", stop_hook_active: false })
 * // { host: "claude", event: "SubagentStop", hook: "_SubagentStop", sessionId: "s1", cwd: "/p", lastAssistantText: "", stopHookActive: false }
 */
export function readEvent(host: HostName, payload: Record<string, unknown>, event?: string): BridgeEvent {
  const name = event ?? str(payload, "hook_event_name") ?? (host === "copilot" ? copilotEventOf(payload) : undefined);
  if (name === undefined) {
    throw new Error(`Cannot read the ${HOST_TITLES[host]} event: the payload names no event (give --event NAME)`);
  }
  const hook = HOST_EVENTS[host][name];
  const sessionId = str(payload, "session_id") ?? str(payload, "sessionId");
  const out: BridgeEvent = {
    host,
    event: name,
    hook,
    sessionId,
    cwd: str(payload, "cwd"),
    lastAssistantText: cut(str(payload, "last_assistant_message") ?? str(payload, "prompt_response") ?? ""),
    stopHookActive: payload.stop_hook_active === true,
  };
  const effect = hook === undefined ? undefined : HOOK_POINTS[hook].effect;
  const agentId = str(payload, "agent_id");
  const agentName = str(payload, "agent_type") ?? str(payload, "agentName");
  if (agentId !== undefined || agentName !== undefined) {
    // One of the two may be missing (Copilot CLI sends only the name): the other stands in.
    out.agent = { id: agentId ?? agentName!, name: agentName ?? agentId! };
  }
  // _SessionStart is the injecting point whose payload has a `source` (Codex's SubagentStart
  // carries SessionStart's fields too: a subagent's point takes none).
  if (
    effect === "injection" && hook !== undefined && HOOK_POINTS[hook].agent === undefined &&
    typeof payload.source === "string"
  ) {
    out.source = payload.source === "resume" || payload.source === "compact" ? "resume" : "startup";
  }
  if (effect === "deny" || effect === "append") {
    const toolName = str(payload, "tool_name") ?? str(payload, "toolName");
    if (toolName === undefined) {
      throw new Error(`Cannot read the ${HOST_TITLES[host]} ${name} event: it names no tool`);
    }
    const input = payload.tool_input ?? payload.toolArgs;
    const id = str(payload, "tool_use_id") ?? str(payload, "tool_call_id") ?? str(payload, "toolCallId") ??
      `${host}-${crypto.randomUUID()}`;
    out.toolCall = hostToolCall(host, toolName, input, id);
    if (effect === "append") {
      const failed = typeof payload.error === "string" || /Failure$/.test(name);
      const response = payload.tool_response ?? payload.tool_result ?? payload.toolResult;
      const record = typeof response === "object" && response !== null ? response as Record<string, unknown> : {};
      const kind = record.resultType ?? record.result_type;
      const isError = failed || (record.error !== undefined && record.error !== null) ||
        (typeof kind === "string" && kind !== "success");
      out.toolResult = {
        text: cut(failed && typeof payload.error === "string" ? payload.error : resultText(response)),
        isError,
      };
    }
  }
  return out;
}
