/**
 * Group `tools`: what a `_PreToolUse` hook adds to one tool call (issue 22). Each sample is one
 * model tool call, `work__read`, through the agent's own path (`runToolCalls` with the
 * session's `toolCallHooks` over a real `HookRunner` and registry), answered by a real SDK
 * server over stdio (bench/fixtures/tool-server.ts, under Bun), with:
 *
 * - no hook (`MCP_HOOK_SERVERS` unset),
 * - a `_PreToolUse` that answers `""` on an SDK server over stdio,
 * - the same over Streamable HTTP (Hono + the SDK, as the example servers),
 * - a `_PreToolUse` whose `_meta["sprout-agent/hook"].tools` does not match the tool (not called),
 * - a command hook spawned per call, the way Claude Code and Codex run theirs
 *   (bench/fixtures/pre-tool-hook.mjs under Node or Bun: the event as JSON on stdin, a decision on stdout).
 *
 * All variants share one registry (the hook servers are connected throughout, only the
 * runner's allowlist differs) and are sampled in a shuffled order each round, the command
 * hooks every few rounds.
 * Also timed: the hooks' `before` alone, in a tight loop, for a hook that does not apply
 * against none. Each runtime runs this in its own child (`bench/child.ts tools`).
 * @module
 */
import { spawn } from "node:child_process";
import { runToolCalls } from "../../lib/agent/tool-calls.ts";
import { loadConfig } from "../../lib/config/config.ts";
import type { HookServers } from "../../lib/config/config.ts";
import type { ToolCall } from "../../lib/conversation/types.ts";
import { hookMeta } from "../../lib/hooks/points.ts";
import { HookRunner } from "../../lib/hooks/runner.ts";
import { type ToolCallHooks, toolCallHooks } from "../../lib/hooks/tool-hooks.ts";
import { createRegistry } from "../../lib/mcp/registry.ts";
import type { McpServerConfig, ToolRegistry } from "../../lib/mcp/types.ts";
import { startServer } from "../../tests/helpers/hook-servers.ts";
import {
  childEnv,
  type Group,
  inRuntime,
  median,
  now,
  root,
  type Row,
  row,
  runtimeBinary,
  tsCommand,
} from "../harness.ts";

const SERVER = `${root}bench/fixtures/tool-server.ts`;
const COMMAND_HOOK = `${root}bench/fixtures/pre-tool-hook.mjs`;
const TOOL = "work__read";

/** What the in-process part measures, medians in ms (`before*Us`: µs per call). */
export interface ToolsTimes {
  none: number;
  stdio: number;
  http: number;
  other: number;
  node: number;
  bun: number;
  beforeNoneUs: number;
  beforeOtherUs: number;
}

/** Options of {@link toolsInProcess}. */
export interface ToolsOptions {
  /** Rounds of the four in-process variants. */
  samples: number;
  /** Samples of each command hook, spread over the rounds. */
  commandSamples: number;
  /** Calls of `before` per timed batch (30 batches of each, after one to warm up). */
  beforeBatch: number;
}

/** A server of the fixture over stdio, under Bun, as our registry's configuration. */
function stdioServer(name: string, args: string[]): McpServerConfig {
  const [command = "", ...rest] = tsCommand(SERVER, "bun");
  // Our stdio client clears the environment (SPEC section 10); keep what the runtimes need.
  const env = childEnv();
  const keep: Record<string, string> = {};
  for (const key of ["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"]) if (env[key] !== undefined) keep[key] = env[key];
  return { name, transport: { type: "stdio", command, args: [...rest, "--stdio", ...args], env: keep } };
}

/** Spawns one command hook, sends it the event, resolves with its parsed decision. */
function commandHook(argv: readonly string[], event: string): Promise<Record<string, unknown>> {
  const [command = "", ...args] = argv;
  const child = spawn(command, args, { env: childEnv() });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stdin.on("error", () => {}); // EPIPE when a hook exits without reading its event
  child.stdin.end(event);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      if (code !== 0) reject(new Error(`Command hook "${argv.join(" ")}" exited with ${code}`));
      else resolve(JSON.parse(out) as Record<string, unknown>);
    });
  });
}

/**
 * The agent's hooks with a command hook spawned before each call, as Claude Code and Codex run
 * a `PreToolUse` hook (their event fields; `{}` lets the call run).
 */
function commandHooked(inner: ToolCallHooks, argv: readonly string[]): ToolCallHooks {
  return {
    async before(call, signal) {
      const decision = await commandHook(
        argv,
        JSON.stringify({
          session_id: "bench",
          transcript_path: "/tmp/bench-transcript.jsonl",
          cwd: root,
          hook_event_name: "PreToolUse",
          tool_name: call.name,
          tool_input: call.arguments,
          tool_use_id: call.id,
        }),
      );
      const output = decision.hookSpecificOutput as { permissionDecision?: string } | undefined;
      if (output?.permissionDecision === "deny") {
        return { run: false, outcome: { content: [{ type: "text", text: "denied" }], isError: true } };
      }
      return await inner.before(call, signal);
    },
    after: (call, outcome, notes) => inner.after(call, outcome, notes),
  };
}

/** The in-process part: connects the servers, samples every variant, closes. */
export async function toolsInProcess(options: ToolsOptions): Promise<ToolsTimes> {
  const http = await startServer(SERVER, ["--port", "0", "--hook"], "bun");
  const { registry, failures } = await createRegistry([
    stdioServer("work", ["--tool"]),
    stdioServer("guard", ["--hook"]),
    { name: "guardhttp", transport: { type: "http", url: http.url, headers: {} } },
    stdioServer("other", ["--hook", "--hook-tools", "fs__write_*,shell__*"]),
  ], { sessionId: "bench", initTimeoutMs: 60_000 });
  try {
    if (failures.length > 0) throw new Error(failures.map((f) => f.message).join("; "));
    return await sample(registry, options);
  } finally {
    await registry.close();
    await http.stop();
  }
}

async function sample(registry: ToolRegistry, options: ToolsOptions): Promise<ToolsTimes> {
  const config = loadConfig({}, () => "");
  const context = { cwd: root, lastAssistantText: "", afterObjection: false, prompt: 1 };
  let hookEvents = 0;
  /** The session's tool points with `allow` as `MCP_HOOK_SERVERS`. */
  const hooks = (allow: HookServers): ToolCallHooks =>
    toolCallHooks({
      runner: new HookRunner({
        registry,
        allow,
        timeoutMs: 30_000,
        onEvent: (e) => void (e.type === "hook" && hookEvents++),
      }),
      registry,
      meta: () => hookMeta(1, 0, config.stopMaxRejections, context),
      policy: config.permissions,
      remembered: new Map(),
    });
  const none = hooks({ kind: "none" });
  const other = hooks({ kind: "only", names: ["other"] });
  const variants: Record<keyof Omit<ToolsTimes, "beforeNoneUs" | "beforeOtherUs">, ToolCallHooks> = {
    none,
    stdio: hooks({ kind: "only", names: ["guard"] }),
    http: hooks({ kind: "only", names: ["guardhttp"] }),
    other,
    node: commandHooked(none, [runtimeBinary("node"), COMMAND_HOOK, "shell__"]),
    bun: commandHooked(none, [runtimeBinary("bun"), COMMAND_HOOK, "shell__"]),
  };
  const signal = new AbortController().signal;
  let n = 0;
  const callOnce = async (h: ToolCallHooks): Promise<void> => {
    const call: ToolCall = { id: `c${n++}`, name: TOOL, arguments: { path: "README.md" } };
    const [outcome] = await runToolCalls([call], {
      registry,
      signal,
      maxParallel: 1,
      timeoutMs: 60_000,
      maxResultBytes: config.maxToolResultBytes,
      refused: {},
      emit: () => {},
      now,
      hooks: h,
    });
    const text = outcome?.content[0]?.type === "text" ? outcome.content[0].text : "";
    if (outcome?.isError !== false || text !== "contents of README.md") {
      throw new Error(`Unexpected tool result: ${JSON.stringify(outcome)}`);
    }
  };
  const fast = ["none", "stdio", "http", "other"] as const;
  const slow = ["node", "bun"] as const;
  const times = new Map<string, number[]>([...fast, ...slow].map((k) => [k, []]));
  const timed = async (name: keyof typeof variants) => {
    const before = hookEvents;
    const start = now();
    await callOnce(variants[name]);
    times.get(name)!.push(now() - start);
    const expected = name === "stdio" || name === "http" ? 1 : 0;
    if (hookEvents - before !== expected) {
      throw new Error(`Variant "${name}" called ${hookEvents - before} hooks, expected ${expected}`);
    }
  };
  // Warm-up: the connections, the JIT, the page cache for the spawned hooks.
  for (let i = 0; i < 20; i++) for (const name of fast) await callOnce(variants[name]);
  for (const name of slow) await callOnce(variants[name]);
  const every = Math.max(1, Math.floor(options.samples / options.commandSamples));
  // A fresh order every round (a fixed rotation would always run a variant right after the
  // same other one, and a call right after an HTTP one, or one to another process, is slower).
  let seed = 22;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const shuffled = <T>(items: readonly T[]): T[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  };
  for (let i = 0; i < options.samples; i++) {
    for (const name of shuffled(fast)) await timed(name);
    if (i % every === 0) { for (const name of shuffled(slow)) await timed(name); }
  }
  // `before` alone: the cost of a hook that does not apply (route, policy, target filtering).
  const call: ToolCall = { id: "b1", name: TOOL, arguments: { path: "README.md" } };
  const perCall = { none: [] as number[], other: [] as number[] };
  for (let round = 0; round < 31; round++) {
    for (const [name, h] of [["none", none], ["other", other]] as const) {
      const start = now();
      for (let k = 0; k < options.beforeBatch; k++) await h.before(call, signal);
      if (round > 0) perCall[name].push(((now() - start) / options.beforeBatch) * 1000); // round 0 warms up
    }
  }
  const m = (k: string) => median(times.get(k)!);
  return {
    none: m("none"),
    stdio: m("stdio"),
    http: m("http"),
    other: m("other"),
    node: m("node"),
    bun: m("bun"),
    beforeNoneUs: median(perCall.none),
    beforeOtherUs: median(perCall.other),
  };
}

/** The rows of one runtime's {@link ToolsTimes}. */
export function toolsRows(which: string, t: ToolsTimes): Row[] {
  const r = (name: string, value: number, baseline: number, unit = "ms") =>
    row("tools", `${which}: ${name}`, value, baseline, unit);
  return [
    r("tool call + stdio _PreToolUse vs no hook", t.stdio, t.none),
    r("tool call + http _PreToolUse vs no hook", t.http, t.none),
    r("tool call + _PreToolUse for other tools vs no hook", t.other, t.none),
    r("tool call + node command hook vs no hook", t.node, t.none),
    r("added per call: stdio _PreToolUse vs node command hook", t.stdio - t.none, t.node - t.none),
    r("added per call: stdio _PreToolUse vs bun command hook", t.stdio - t.none, t.bun - t.none),
    r("added per call: http _PreToolUse vs node command hook", t.http - t.none, t.node - t.none),
    r("added per call: http _PreToolUse vs bun command hook", t.http - t.none, t.bun - t.none),
    r("before(), hook for other tools vs no hook", t.beforeOtherUs, t.beforeNoneUs, "µs"),
  ];
}

/** The `tools` group. */
export const toolsGroup: Group = {
  name: "tools",
  title: "one tool call: a _PreToolUse hook server vs none and vs a command hook spawned per call",
  async run({ quick, runtimes, log }) {
    const options: ToolsOptions = quick
      ? { samples: 40, commandSamples: 4, beforeBatch: 200 }
      : { samples: 400, commandSamples: 30, beforeBatch: 1000 };
    const rows: Row[] = [];
    for (const which of runtimes) {
      log(`tools: ${which}`);
      rows.push(...toolsRows(which, await inRuntime<ToolsTimes>(which, "tools", options)));
    }
    return rows;
  },
};
