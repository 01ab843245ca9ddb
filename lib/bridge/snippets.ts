/**
 * `hook-bridge --print-config HOST`: the settings that run the bridge as the host's command
 * hook for every event it maps (lib/bridge/hosts.ts), in the host's own configuration format.
 * @module
 */

import { HOST_EVENTS, type HostName } from "./hosts.ts";

/** Where each host reads the printed settings from (merged with what is there). */
export const CONFIG_FILES: Readonly<Record<HostName, string>> = {
  claude: ".claude/settings.json (or ~/.claude/settings.json)",
  codex: ".codex/hooks.json (or ~/.codex/hooks.json)",
  gemini: ".gemini/settings.json (or ~/.gemini/settings.json)",
  copilot: ".github/hooks/sprout-agent.json",
};

/**
 * A host waits this long for the bridge, in seconds: room for connecting the servers
 * (`SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS`, 30 s at most by default) and one hook timeout.
 */
export const HOOK_TIMEOUT_SECS = 60;

/**
 * The settings JSON that runs `command hook-bridge --host HOST` on each of the host's mapped
 * events (Copilot CLI's camelCase events, with `--event NAME`, since their payloads name none).
 * @param command how the host starts our CLI; default `sprout-agent` (the package's bin)
 * @example hookSettings("claude").hooks.Stop // [{ hooks: [{ type: "command", command: "sprout-agent hook-bridge --host claude", timeout: 60 }] }]
 */
export function hookSettings(host: HostName, command = "sprout-agent"):
  & { hooks: Record<string, unknown[]> }
  & Record<
    string,
    unknown
  > {
  const run = `${command} hook-bridge --host ${host}`;
  const hooks: Record<string, unknown[]> = {};
  if (host === "copilot") {
    for (const event of Object.keys(HOST_EVENTS.copilot).filter((e) => /^[a-z]/.test(e))) {
      hooks[event] = [{ type: "command", bash: `${run} --event ${event}`, timeoutSec: HOOK_TIMEOUT_SECS }];
    }
    return { version: 1, hooks };
  }
  for (const event of Object.keys(HOST_EVENTS[host])) {
    if (host === "claude" && event === "PostToolUseFailure") continue; // older versions reject unknown events
    const handler = host === "gemini"
      ? { type: "command", name: "sprout-agent", command: run, timeout: HOOK_TIMEOUT_SECS * 1000 }
      : { type: "command", command: run, timeout: HOOK_TIMEOUT_SECS };
    // No `matcher`: every tool (Codex reads a matcher as a regex, where "*" is not one).
    hooks[event] = [{ hooks: [handler] }];
  }
  return { hooks };
}

/**
 * The payload fields each Claude Code event's `mcp_tool` hook passes to the proxy, as the
 * `input` of the hook (`${field}` is Claude Code's substitution: an object becomes its JSON
 * text, a missing field `""`): what `readEvent` reads of that event.
 */
const PROXY_FIELDS: Readonly<Record<string, readonly string[]>> = {
  Stop: ["stop_hook_active", "last_assistant_message"],
  SubagentStart: ["agent_id", "agent_type"],
  SubagentStop: ["agent_id", "agent_type", "stop_hook_active", "last_assistant_message"],
  // agent_id and agent_type: set when the tool call is a subagent's (else "", dropped).
  PreToolUse: ["tool_name", "tool_input", "tool_use_id", "agent_id", "agent_type"],
  PostToolUse: ["tool_name", "tool_input", "tool_use_id", "tool_response", "agent_id", "agent_type"],
  UserPromptSubmit: [],
  PreCompact: [],
  SessionEnd: [],
};

/**
 * `hook-proxy --print-config settings`: Claude Code's settings (`.claude/settings.json`) that
 * call the proxied server `server`'s hooks as `mcp_tool` hooks, each event's payload passed as
 * the call's arguments. `SessionStart` is left out: Claude Code refuses `mcp_tool` hooks there
 * (its servers are still connecting); use the command bridge for it.
 * @example proxySettings("todo").hooks.Stop // [{ hooks: [{ type: "mcp_tool", server: "todo", tool: "_Stop", input: {…}, timeout: 60 }] }]
 */
export function proxySettings(server: string): { hooks: Record<string, unknown[]> } {
  const hooks: Record<string, unknown[]> = {};
  for (const [event, fields] of Object.entries(PROXY_FIELDS)) {
    const input: Record<string, string> = {};
    for (const field of ["hook_event_name", "session_id", "cwd", ...fields]) input[field] = `\${${field}}`;
    const tool = HOST_EVENTS.claude[event]!;
    hooks[event] = [{ hooks: [{ type: "mcp_tool", server, tool, input, timeout: HOOK_TIMEOUT_SECS }] }];
  }
  return { hooks };
}

/**
 * `hook-proxy --print-config mcp`: the `.mcp.json` entry (Claude Code's MCP configuration)
 * that starts the proxy as server `server`, with `args` after `hook-proxy`.
 * @param command how Claude Code starts our CLI, split at spaces; default `sprout-agent`
 * @example proxyMcpConfig("todo", ["--url", "http://127.0.0.1:8787/mcp"]).mcpServers.todo // { command: "sprout-agent", args: ["hook-proxy", "--url", "http://127.0.0.1:8787/mcp"] }
 */
export function proxyMcpConfig(
  server: string,
  args: readonly string[],
  command = "sprout-agent",
): { mcpServers: Record<string, { command: string; args: string[] }> } {
  const [program, ...pre] = command.split(" ").filter((w) => w !== "");
  return { mcpServers: { [server]: { command: program ?? "sprout-agent", args: [...pre, "hook-proxy", ...args] } } };
}

/** What a handler is, for finding it again: its kind and what it runs. */
function handlerKey(handler: unknown): string | undefined {
  if (typeof handler !== "object" || handler === null) return undefined;
  const h = handler as Record<string, unknown>;
  return JSON.stringify([h.type, h.command ?? h.bash ?? null, h.server ?? null, h.tool ?? null]);
}

/** Every handler key already under one event: in matcher groups (`{hooks: […]}`) and flat (Copilot CLI). */
function keysOf(entries: readonly unknown[]): Set<string> {
  const keys = new Set<string>();
  for (const entry of entries) {
    const inner = typeof entry === "object" && entry !== null && Array.isArray((entry as { hooks?: unknown }).hooks)
      ? (entry as { hooks: unknown[] }).hooks
      : [entry];
    for (const h of inner) {
      const key = handlerKey(h);
      if (key !== undefined) keys.add(key);
    }
  }
  return keys;
}

/**
 * `--merge FILE`: `snippet` (printed settings or an `.mcp.json` entry) merged into `existing`,
 * a settings file's JSON, keeping everything the user has: other keys, other hooks of the same
 * events, other servers. A hook handler already there (same kind and command, or same server
 * and tool) is not added again, so merging twice changes nothing; an `mcpServers` entry of
 * the same name is replaced; any other key of the snippet (`version`) is set only when absent.
 * Returns the merged JSON and how many entries were added or replaced.
 * @throws {Error} when `existing`, or its `hooks`, `mcpServers` or one event's list, is not of the expected shape
 * @example mergeSettings({ model: "x" }, hookSettings("claude")).merged.model // "x"
 */
export function mergeSettings(
  existing: unknown,
  snippet: Record<string, unknown>,
): { merged: Record<string, unknown>; added: number } {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(existing)) throw new Error("it is not a JSON object");
  const merged: Record<string, unknown> = { ...existing };
  let added = 0;
  for (const [key, value] of Object.entries(snippet)) {
    if (key === "hooks" && isObject(value)) {
      const hooks = merged.hooks ?? {};
      if (!isObject(hooks)) throw new Error(`its "hooks" is not an object`);
      const out: Record<string, unknown> = { ...hooks };
      for (const [event, entries] of Object.entries(value)) {
        const list = out[event] ?? [];
        if (!Array.isArray(list)) throw new Error(`its "hooks.${event}" is not a list`);
        const have = keysOf(list);
        const fresh = (entries as unknown[]).filter((e) => [...keysOf([e])].some((k) => !have.has(k)));
        added += fresh.length;
        out[event] = [...list, ...fresh];
      }
      merged.hooks = out;
    } else if (key === "mcpServers" && isObject(value)) {
      const servers = merged.mcpServers ?? {};
      if (!isObject(servers)) throw new Error(`its "mcpServers" is not an object`);
      const out: Record<string, unknown> = { ...servers };
      for (const [name, entry] of Object.entries(value)) {
        if (JSON.stringify(out[name]) !== JSON.stringify(entry)) added++;
        out[name] = entry;
      }
      merged.mcpServers = out;
    } else if (!(key in merged)) {
      merged[key] = value;
      added++;
    }
  }
  return { merged, added };
}
