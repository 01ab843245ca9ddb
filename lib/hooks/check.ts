/**
 * Checks for people who write and enable hooks (docs/HOOKS.md): the start-up warnings about
 * `MCP_HOOK_SERVERS` (a name no server has, hooks nobody enabled), and the dry run of
 * `cli.ts hooks`, which calls each enabled hook once and reports every way it breaks the
 * contract of SPEC section 4.3.
 * @module
 */

import { hooksEnabledFor, type HookServers } from "../config/config.ts";
import { HOOK_TIMEOUTS_BEFORE_KILL, HookRunner } from "./runner.ts";
import { HOOK_POINTS, type HookMeta, hookMeta, type HookName, toolPatternsOf } from "./points.ts";
import type { HookOutcome } from "../conversation/events.ts";
import type { McpTool, ToolRegistry } from "../mcp/types.ts";
import { formatSeconds } from "../util/time.ts";

/** True when the agent calls hook tools named `name` (a key of `HOOK_POINTS`). */
export function isHookPoint(name: string): name is HookName {
  return Object.hasOwn(HOOK_POINTS, name);
}

/**
 * The start-up warnings about the hook allowlist, at most one of each kind: names in
 * `MCP_HOOK_SERVERS` that no configured server has (a typo turns hooks off silently
 * otherwise), and connected servers listing hooks the allowlist leaves off.
 * @param configured every configured server name, started or not
 * @param listed the connected servers' `_`-named tools (`ToolRegistry.hookTools()`)
 * @example
 * hookSetupWarnings({ configured: ["todo"], allow: { kind: "only", names: ["todoo"] }, listed: [] })
 * // ['MCP_HOOK_SERVERS names server "todoo", which is not configured (configured: "todo")']
 */
export function hookSetupWarnings(options: {
  configured: readonly string[];
  allow: HookServers;
  listed: ReadonlyArray<{ server: string; tools: readonly McpTool[] }>;
}): string[] {
  const { configured, allow, listed } = options;
  const warnings: string[] = [];
  const quoted = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(", ");
  if (allow.kind === "only") {
    const unknown = allow.names.filter((name) => !configured.includes(name));
    if (unknown.length > 0) {
      const which = unknown.length === 1
        ? `server ${quoted(unknown)}, which is`
        : `servers ${quoted(unknown)}, which are`;
      const known = configured.length === 0 ? "no server is configured" : `configured: ${quoted(configured)}`;
      warnings.push(`MCP_HOOK_SERVERS names ${which} not configured (${known})`);
    }
  }
  const off = listed
    .filter(({ server }) => !hooksEnabledFor(allow, server))
    .map(({ server, tools }) => ({ server, hooks: tools.map((t) => t.name).filter(isHookPoint) }))
    .filter(({ hooks }) => hooks.length > 0);
  if (off.length > 0) {
    const list = off.map(({ server, hooks }) => `${JSON.stringify(server)} (${hooks.join(", ")})`).join(", ");
    const now = allow.kind === "none" ? "unset" : `"${allow.kind === "all" ? "*" : allow.names.join(",")}"`;
    warnings.push(
      `Hooks not enabled: ${off.length === 1 ? "server" : "servers"} ${list}; MCP_HOOK_SERVERS (now ${now}) must name ${
        off.length === 1 ? "it" : "them"
      } for the hooks to run`,
    );
  }
  return warnings;
}

/**
 * Why a hook's input schema breaks the contract (hooks are called with arguments `{}`), or
 * `undefined`: a schema that is not an object schema, or one with `required` properties.
 * @example schemaProblem({ type: "object", required: ["path"] }) // 'its input schema requires arguments: "path"'
 */
export function schemaProblem(schema: unknown): string | undefined {
  if (schema === undefined) return undefined;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    return "its input schema is not a JSON Schema object";
  }
  const { type, required } = schema as { type?: unknown; required?: unknown };
  if (type !== undefined && type !== "object") return `its input schema has type ${JSON.stringify(type)}, not "object"`;
  if (Array.isArray(required) && required.length > 0) {
    return `its input schema requires arguments: ${
      required.map((r) => JSON.stringify(r)).join(", ")
    } (hooks are called with {})`;
  }
  return undefined;
}

/**
 * What the dry run sends the tool points besides `dryRun: true` (SPEC section 11): a sample
 * call of a tool `example__tool`, so a hook that reads its `toolCall` can be tried.
 */
const DRY_RUN_TOOL: Partial<Record<HookName, Pick<HookMeta, "toolCall" | "toolResult">>> = {
  _PreToolUse: {
    toolCall: { id: "dryrun000", name: "example__tool", server: "example", tool: "tool", arguments: {} },
  },
  _PostToolUse: {
    toolCall: { id: "dryrun000", name: "example__tool", server: "example", tool: "tool", arguments: {} },
    toolResult: { text: "", isError: false },
  },
};

/** What `cli.ts hooks` found for one `_`-named tool of one server. */
export interface HookCheck {
  /** The tool's name, `_Stop` for example. */
  name: string;
  /** `HOOK_POINTS` has it: the agent calls it. Otherwise the name is reserved and never called. */
  point: boolean;
  /** `MCP_HOOK_SERVERS` names its server (always false for a name that is no hook point). */
  enabled: boolean;
  /** The dry-run call's outcome (only for enabled hook points): as in a `hook` event. */
  outcome?: HookOutcome;
  /** The dry-run call's duration, in ms. */
  durationMs?: number;
  /** The text the hook returned, when it objected (or had text to inject). */
  text?: string;
  /**
   * The tool points: the globs over qualified tool names it declares
   * (`_meta["sprout-agent/hook"].tools`, SPEC 7.6); absent when it applies to every tool.
   */
  tools?: string[];
  /** Each way it breaks the contract; empty when it keeps it. */
  problems: string[];
}

/** One server in the report of `cli.ts hooks`. */
export interface ServerCheck {
  /** The configured name. */
  server: string;
  /** `MCP_HOOK_SERVERS` names it. */
  enabled: boolean;
  /** Why it could not start; then `hooks` is empty. */
  error?: string;
  /** Its `_`-named tools, in the order it lists them. */
  hooks: HookCheck[];
}

/**
 * What is wrong with a hook tool's `_meta["sprout-agent/hook"].tools` (SPEC 7.6), when present
 * and not an array of strings: a lone string (or any other value) is no declaration, so the
 * hook applies to every tool; entries that are not strings are ignored.
 */
function toolsDeclarationProblem(tool: McpTool): string | undefined {
  const meta = (tool as { _meta?: unknown })._meta;
  const hook = typeof meta === "object" && meta !== null
    ? (meta as Record<string, unknown>)["sprout-agent/hook"]
    : undefined;
  if (typeof hook !== "object" || hook === null || !Object.hasOwn(hook, "tools")) return undefined;
  const tools = (hook as Record<string, unknown>).tools;
  const what = '_meta["sprout-agent/hook"].tools must be an array of globs (strings)';
  if (!Array.isArray(tools)) return `${what}: ${JSON.stringify(tools) ?? String(tools)} applies to every tool`;
  const bad = tools.filter((t) => typeof t !== "string");
  if (bad.length === 0) return undefined;
  return `${what}: ${bad.map((t) => JSON.stringify(t) ?? String(t)).join(", ")} ignored`;
}

/**
 * The dry run of `cli.ts hooks`: each enabled hook point of each connected server is called
 * once, through the agent's own {@link HookRunner} (same timeout, same classification), with
 * `_meta["sprout-agent/hook"]` = `{event, round: 1, rejectionsUsed: 0, rejectionsLeft, dryRun:
 * true}`; hooks of servers not enabled and names that are no hook point are listed, not
 * called. A problem is a result a real call would not count (`isError`, a timeout, a
 * transport error, no text or only whitespace when content came), an input schema that
 * requires arguments, a tool point's `tools` declaration that is not an array of strings
 * (SPEC 7.6), or an enabled point left uncalled because its server stopped (two
 * timeouts in a row kill it, as in a session). Servers in `failures` are reported with their message.
 * @example
 * const report = await checkHooks(registry, { configured: ["hello"], failures: [], allow: { kind: "all" }, timeoutMs: 2500, maxRejections: 3 });
 * const broken = report.some((s) => s.error !== undefined || s.hooks.some((h) => h.problems.length > 0));
 */
export async function checkHooks(registry: ToolRegistry, options: {
  /** Every configured server name, in configuration order. */
  configured: readonly string[];
  /** The servers that could not start. */
  failures: ReadonlyArray<{ server: string; message: string }>;
  /** `MCP_HOOK_SERVERS`, parsed. */
  allow: HookServers;
  /** Per hook call, in ms (`SPROUT_AGENT_HOOK_TIMEOUT_MS`). */
  timeoutMs: number;
  /** `SPROUT_AGENT_STOP_MAX_REJECTIONS`, for `rejectionsLeft`. */
  maxRejections: number;
}): Promise<ServerCheck[]> {
  const listed = new Map(registry.hookTools().map(({ server, tools }) => [server, tools]));
  const report: ServerCheck[] = options.configured.map((server) => {
    const enabled = hooksEnabledFor(options.allow, server);
    const failure = options.failures.find((f) => f.server === server);
    const hooks = (listed.get(server) ?? []).map((tool): HookCheck => {
      const point = isHookPoint(tool.name);
      const problem = point ? schemaProblem(tool.inputSchema) : undefined;
      const check: HookCheck = {
        name: tool.name,
        point,
        enabled: point && enabled,
        problems: problem === undefined ? [] : [problem],
      };
      const patterns = point ? toolPatternsOf(tool) : undefined;
      if (patterns !== undefined) check.tools = patterns;
      const declared = point ? toolsDeclarationProblem(tool) : undefined;
      if (declared !== undefined) check.problems.push(declared);
      return check;
    });
    return { server, enabled, ...(failure === undefined ? {} : { error: failure.message }), hooks };
  });
  const runner = new HookRunner({ registry, allow: options.allow, timeoutMs: options.timeoutMs });
  const points = Object.keys(HOOK_POINTS).filter(isHookPoint);
  // One point after the other: a server sees one dry-run call at a time, in table order.
  for (const point of points) {
    const meta: HookMeta = Object.assign(hookMeta(1, 0, options.maxRejections), DRY_RUN_TOOL[point] ?? {}, {
      dryRun: true,
    });
    for (const result of await runner.run(point, meta)) {
      const check = report.find((s) => s.server === result.server)?.hooks.find((h) => h.name === point);
      if (check === undefined) continue;
      check.outcome = result.outcome;
      check.durationMs = result.durationMs;
      if (result.text !== undefined) check.text = result.text;
      if (result.outcome === "timeout") {
        check.problems.push(`it took longer than the ${formatSeconds(options.timeoutMs)} s hook timeout`);
      } else if (result.message !== undefined) {
        check.problems.push(result.message.replace(/^Hook "[^"]*" of server "[^"]*" /, ""));
      }
    }
  }
  // An enabled hook point not called: its server stopped during the dry run, usually killed by
  // the runner after two timeouts in a row (SPEC 4.4), as it would be in a session.
  for (const server of report) {
    if (server.error !== undefined) continue;
    const timeouts = server.hooks.filter((h) => h.outcome === "timeout").length;
    for (const h of server.hooks) {
      if (!h.point || !h.enabled || h.outcome !== undefined) continue;
      h.problems.push(
        timeouts >= HOOK_TIMEOUTS_BEFORE_KILL
          ? `the server was killed after ${HOOK_TIMEOUTS_BEFORE_KILL} hook timeouts in a row, as a running agent would kill it`
          : "the server stopped before this call",
      );
    }
  }
  return report;
}
