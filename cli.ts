#!/usr/bin/env -S deno run -A
/**
 * The command line (SPEC section 11):
 *
 *     cli.ts run [--mcp-config FILE] [--json] [PROMPT…]
 *     cli.ts hooks [--mcp-config FILE] [--json]
 *     cli.ts acp
 *     cli.ts --help | --version
 *
 * Runs under `deno run -A cli.ts`, `bun cli.ts` and `npx tsx cli.ts` alike.
 * @module
 */

import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import process from "node:process";
import { type Agent, createAgent } from "./lib/agent.ts";
import { agentOptionsFromEnv, optionKeys } from "./lib/agent-env.ts";
import { CONFIG_VARIABLES, loadConfig, serverStderrShown } from "./lib/config.ts";
import { AgentError, isAbortError } from "./lib/errors.ts";
import type { AgentEvent, HookOutcome, PromptResult } from "./lib/events.ts";
import { checkHooks, hookSetupWarnings, isHookPoint, type ServerCheck } from "./lib/hook-check.ts";
import { HOOK_POINTS } from "./lib/hook-points.ts";
import { parseMcpConfig } from "./lib/mcp/config.ts";
import { configSecrets, redact, redactEvent, referencedSecrets } from "./lib/redact.ts";
import { createRegistry } from "./lib/mcp/registry.ts";
import { killAllServers } from "./lib/mcp/stdio.ts";
import type { McpServerConfig } from "./lib/mcp/types.ts";
import { FLUSH_TIMEOUT_MS, trackedOutput } from "./lib/output.ts";
import { formatDuration, formatSeconds } from "./lib/time.ts";
import { VERSION } from "./lib/version.ts";

const USAGE = `sprout-agent ${VERSION}: an LLM agent whose lifecycle MCP servers can steer

Usage:
  cli.ts run [--mcp-config FILE] [--json] [PROMPT…]   run one prompt (PROMPT from stdin when absent or "-")
  cli.ts hooks [--mcp-config FILE] [--json]           list the servers' hooks and call each enabled one once,
                                                      as a dry run (exit 1 when one breaks the contract)
  cli.ts acp                                          serve the Agent Client Protocol on stdin/stdout
  cli.ts --help | --version

Options:
  --mcp-config FILE   MCP servers in the .mcp.json shape (default: ./.mcp.json when it exists)
  --json              one JSON event per line on stdout; the last line is the result (hooks: one report line)

Exit status: 0 done, 1 runtime failure, 2 usage or configuration error, 130/143 after SIGINT/SIGTERM,
141 when the reader of stdout has gone. Every exit waits for stdout to take what was written
(giving up once it has taken nothing for 5 s).

Environment (default in brackets):
${CONFIG_VARIABLES.map((v) => `  ${v.name.padEnd(34)} ${v.meaning} [${v.default}]`).join("\n")}
`;

/** API keys and configured header values: redacted from everything printed (guarantee 6). */
let secrets: string[] = [];
/** The credential variables the MCP configuration file references, by value (`referencedSecrets`). */
let configReferenced: string[] = [];

// Every byte for stdout and stderr goes through these writers, and every exit goes through
// exit() below, which waits for them to flush: a pipe holds 64 KiB, and process.exit() drops
// what the runtime still queues (Bun lost 260 KB of 310 KB behind a slow reader).
// A closed stdout (`cli.ts run --json … | head -1`) ends the run quietly, as SIGPIPE would.
let stdoutLost: number | undefined;
const stdout = trackedOutput(process.stdout, {
  onClosed: (error: NodeJS.ErrnoException) => {
    stdoutLost = error.code === "EPIPE" ? 141 : 1;
    // A reader that went away is the quiet case; any other failure (a full disk) is said.
    if (stdoutLost === 1) process.stderr.write(`sprout-agent: Cannot write to stdout: ${error.message}\n`);
    exit(stdoutLost);
  },
});
const stderr = trackedOutput(process.stderr);
let exiting = false;

/**
 * Ends the process with `code` once stdout and stderr are flushed, or once the reader has
 * taken no output for FLUSH_TIMEOUT_MS (5 s; then output is lost: a 0 becomes 1, with a line
 * on stderr). Stdio servers are killed first. A later call is ignored, except that a stdout
 * closed while flushing turns a 0 into 141 (EPIPE) or 1. process.exit() is explicit so a
 * stdin reader or a keep-alive socket cannot hold the process open. (Deno writes pipes
 * synchronously: there a reader that never reads holds the process until it closes the pipe.)
 */
function exit(code: number): void {
  if (exiting) return;
  exiting = true;
  killAllServers();
  void Promise.all([stdout.flush(FLUSH_TIMEOUT_MS), stderr.flush(FLUSH_TIMEOUT_MS)]).then(([flushed]) => {
    if (!flushed) {
      process.stderr.write(
        `sprout-agent: Cannot flush stdout: the reader took no output for ${
          formatSeconds(FLUSH_TIMEOUT_MS)
        } s, ${stdout.pending} writes lost\n`,
      );
    }
    const lost = stdoutLost ?? (flushed ? undefined : 1);
    process.exit(code === 0 && lost !== undefined ? lost : code);
  });
}

interface RunArgs {
  mcpConfig: string | undefined;
  json: boolean;
  prompt: string[];
}

function parseRunArgs(args: string[]): RunArgs {
  const out: RunArgs = { mcpConfig: undefined, json: false, prompt: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      out.prompt.push(...args.slice(i + 1));
      break;
    }
    if (arg === "--json") out.json = true;
    else if (arg === "--mcp-config" || arg.startsWith("--mcp-config=")) {
      const value = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : args[++i];
      if (value === undefined || value === "") {
        throw new AgentError("usage", "Missing value for --mcp-config: give a file path");
      }
      out.mcpConfig = value;
    } else if (arg.startsWith("--") || (arg.startsWith("-") && arg !== "-")) {
      throw new AgentError("usage", `Unknown flag ${JSON.stringify(arg)}: see --help`);
    } else out.prompt.push(arg);
  }
  return out;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function loadServers(path: string | undefined): McpServerConfig[] {
  configReferenced = [];
  const file = path ?? (existsSync(".mcp.json") ? ".mcp.json" : undefined);
  if (file === undefined) return [];
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new AgentError(
      "config",
      `Cannot read MCP configuration ${JSON.stringify(file)}: ${(error as Error).message}`,
    );
  }
  configReferenced = referencedSecrets(text, process.env);
  return parseMcpConfig(text, resolve(file), { env: process.env, resolvePath: (base, rel) => resolve(base, rel) });
}

/** Human output: colour only on a TTY without NO_COLOR. */
function painter(stream: NodeJS.WriteStream) {
  const on = stream.isTTY === true && (process.env["NO_COLOR"] ?? "") === "";
  const wrap = (code: string) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { dim: wrap("2"), green: wrap("32"), red: wrap("31"), yellow: wrap("33"), cyan: wrap("36") };
}

function shortArgs(args: Record<string, unknown>): string {
  const json = JSON.stringify(args);
  return json.length > 80 ? `${json.slice(0, 77)}…` : json;
}

function firstLine(text: string, max = 160): string {
  const line = text.trim().split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Prints events for people: streamed text, one line per tool call and hook objection. The
 * model's thinking goes to stderr, dimmed and marked `∴`, so it is never mistaken for (or
 * piped with) the answer; a refusal's explanation gets a line of its own.
 */
function humanPrinter(): { event: (e: AgentEvent) => void; result: (r: PromptResult) => void } {
  const out = painter(process.stdout);
  const err = painter(process.stderr);
  let midLine = false;
  let thinking: "no" | "line-start" | "mid-line" = "no";
  const running = new Map<string, { args: Record<string, unknown>; timer: ReturnType<typeof setTimeout> }>();
  const endThinking = () => {
    if (thinking === "mid-line") stderr.write("\n");
    thinking = "no";
  };
  const line = (text: string) => {
    endThinking();
    if (midLine) stdout.write("\n");
    midLine = false;
    stdout.write(`${text}\n`);
  };
  return {
    event(e) {
      if (e.type !== "thinking-delta") endThinking();
      switch (e.type) {
        case "thinking-delta": {
          if (e.text === "") break;
          if (midLine) stdout.write("\n");
          midLine = false;
          const start = thinking === "no" ? "∴ " : "";
          stderr.write(err.dim(`${start}${e.text}`));
          thinking = e.text.endsWith("\n") ? "line-start" : "mid-line";
          break;
        }
        case "text-delta":
          stdout.write(e.text);
          midLine = !e.text.endsWith("\n");
          break;
        case "tool-start": {
          // One line per call, printed when it ends; a call still running after 1 s says so.
          const timer = setTimeout(() => line(out.dim(`… ${e.name} ${shortArgs(e.arguments)} running`)), 1000);
          running.set(e.id, { args: e.arguments, timer });
          break;
        }
        case "tool-end": {
          const started = running.get(e.id);
          running.delete(e.id);
          if (started) clearTimeout(started.timer);
          const args = started ? ` ${out.dim(shortArgs(started.args))}` : "";
          // A failure shows its error; a success the first line of what the model got back.
          const tail = e.ok
            ? out.dim(firstLine(e.output, 80) === "" ? "" : ` → ${firstLine(e.output, 80)}`)
            : ` ${out.red(firstLine(e.output, 120))}`;
          line(
            `${e.ok ? out.green("✓") : out.red("✗")} ${e.name}${args} ${
              out.dim(`(${formatDuration(e.durationMs)})`)
            }${tail}`,
          );
          break;
        }
        case "hook":
          // _PostCompact output is not an objection: the compaction line names those servers.
          if (e.outcome === "objection" && (e.hook === "_SessionStart" || e.hook === "_UserPromptSubmit")) {
            line(out.cyan(`⟲ ${e.hook} context from ${e.server}: ${firstLine(e.text ?? "")}`));
          } else if (e.outcome === "objection" && e.hook === "_SessionEnd") {
            // Only logged: for people, a line on stderr beside the warnings.
            if (midLine) stdout.write("\n");
            midLine = false;
            stderr.write(err.dim(`${e.hook} from ${e.server}: ${firstLine(e.text ?? "")}\n`));
          } else if (e.outcome === "objection" && e.hook === "_Stop") {
            // The first line, then up to 8 more lines of the objection, indented.
            const [first = "", ...more] = (e.text ?? "").trim().split("\n").filter((l) => l.trim() !== "");
            line(out.yellow(`⟲ ${e.hook} objection from ${e.server}: ${first}`));
            for (const l of more.slice(0, 8)) line(out.dim(`    ${l.length > 160 ? `${l.slice(0, 159)}…` : l}`));
            if (more.length > 8) line(out.dim(`    … ${more.length - 8} more lines`));
          }
          break;
        case "compaction":
          line(out.cyan(
            `⟲ context compacted: ${Math.round(e.beforeTokens / 1000)}k → ${Math.round(e.afterTokens / 1000)}k tokens` +
              (e.mode === "truncation" ? " (old turns dropped)" : `; _PostCompact: ${e.injected.join(", ") || "none"}`),
          ));
          break;
        case "warning":
          if (midLine) stdout.write("\n");
          midLine = false;
          stderr.write(err.yellow(`warning: ${e.message}\n`));
          break;
        case "round-start":
          break;
      }
    },
    result(r) {
      if (r.refusal !== undefined) line(out.yellow(`⊘ refused: ${r.refusal}`));
      line(out.dim(
        `■ ${r.stopReason} · ${r.rounds} round${r.rounds === 1 ? "" : "s"} · ${r.toolCalls} tool call${
          r.toolCalls === 1 ? "" : "s"
        } · ` +
          `${r.objections} objection${r.objections === 1 ? "" : "s"} · ${formatDuration(r.durationMs)}`,
      ));
    },
  };
}

/**
 * `SPROUT_AGENT_SERVER_STDERR`: stdio servers' stderr lines on our stderr as `[name] line`,
 * shown by default except with `--json`; never on stdout.
 */
function serverStderrOption(json: boolean): { onServerStderr?: (server: string, line: string) => void } {
  if (!serverStderrShown(process.env, !json)) return {};
  const err = painter(process.stderr);
  return {
    onServerStderr: (server, line) => stderr.write(`${err.dim(`[${server}]`)} ${visible(redact(line, secrets))}\n`),
  };
}

/**
 * `text` with its control characters (but tab) in caret notation (`ESC` as `^[`, `BEL` as `^G`,
 * C1 as `^[` and a letter): a server's stderr goes to the user's terminal, where an escape
 * sequence could set the title, hide text or write to the clipboard.
 */
function visible(text: string): string {
  // deno-lint-ignore no-control-regex -- matching control characters is the point
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f-\x9f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code === 0x7f) return "^?";
    return code < 0x20 ? `^${String.fromCharCode(code + 64)}` : `^[${String.fromCharCode(code - 64)}`;
  });
}

/** `cli.ts run`: one prompt through the agent. Returns the exit status. */
async function run(args: string[]): Promise<number> {
  const parsed = parseRunArgs(args);
  const options = agentOptionsFromEnv(process.env, { readFile: (p) => readFileSync(p, "utf8") });
  secrets = configSecrets(optionKeys(options));
  const servers = loadServers(parsed.mcpConfig);
  secrets = [...configSecrets(optionKeys(options), servers), ...configReferenced];
  let prompt: string;
  if (parsed.prompt.length === 0 || (parsed.prompt.length === 1 && parsed.prompt[0] === "-")) {
    if (parsed.prompt.length === 0 && process.stdin.isTTY) {
      throw new AgentError("usage", "Missing prompt: give it as arguments, or pipe it on stdin");
    }
    prompt = await readStdin();
  } else prompt = parsed.prompt.join(" ");
  if (prompt.trim() === "") throw new AgentError("usage", "Missing prompt: the prompt is empty");

  const json = parsed.json;
  const serverStderr = serverStderrOption(json);
  const emitJson = (value: Record<string, unknown>) =>
    stdout.write(`${JSON.stringify(redactEvent(value as { type: string }, secrets))}\n`);
  const printer = json ? undefined : humanPrinter();
  const human = printer === undefined ? undefined : {
    event: (e: AgentEvent) => printer.event(redactEvent(e, secrets)),
    result: (r: PromptResult) =>
      printer.result(r.refusal === undefined ? r : { ...r, refusal: redact(r.refusal, secrets) }),
  };
  const warn = (message: string) => {
    if (json) emitJson({ type: "warning", message });
    else human!.event({ type: "warning", message });
  };
  const onEvent = (event: AgentEvent) => {
    // Thinking is not answer text and not one of the --json event types (SPEC section 11).
    if (json) {
      if (event.type !== "thinking-delta") emitJson(event as unknown as Record<string, unknown>);
    } else human!.event(event);
  };

  const controller = new AbortController();
  let signalled: "SIGINT" | "SIGTERM" | undefined;
  let signals = 0;
  const onSignal = (name: "SIGINT" | "SIGTERM") => () => {
    // The first signal cancels the run; a second exits without waiting for it to wind down,
    // still flushing output; a third exits at once. Output already being flushed (the run is
    // over) keeps flushing.
    signals++;
    if (signals >= 3) process.exit(name === "SIGINT" ? 130 : 143);
    if (signals === 2) return exit(name === "SIGINT" ? 130 : 143);
    if (exiting) return;
    signalled = name;
    controller.abort();
  };
  process.on("SIGINT", onSignal("SIGINT"));
  process.on("SIGTERM", onSignal("SIGTERM"));

  // A server still starting (up to SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS, 30 s) must not hold a
  // signal back: creation aborts at once. killAllServers() on the way out ends every server
  // spawned so far.
  let agent: Agent;
  try {
    agent = await createAgent({
      ...options,
      mcpServers: servers,
      cwd: process.cwd(),
      env: process.env,
      onWarning: warn,
      // _SessionStart's and _SessionEnd's events, outside the prompt.
      onEvent,
      ...serverStderr,
      signal: controller.signal,
    });
  } catch (error) {
    if (signalled !== undefined && isAbortError(error)) return signalled === "SIGINT" ? 130 : 143;
    throw error;
  }
  // The registry's messages already name the server, most as "Cannot start server …".
  for (const f of agent.failures) {
    warn(f.message.startsWith("Cannot start server") ? f.message : `Cannot start server "${f.server}": ${f.message}`);
  }
  try {
    if (signalled !== undefined) return signalled === "SIGINT" ? 130 : 143;
    const runHandle = agent.prompt(prompt, { signal: controller.signal });
    for await (const event of runHandle) onEvent(event);
    let result: PromptResult;
    try {
      result = await runHandle.result;
    } catch (error) {
      await agent.close(); // _SessionEnd's events come before the last line
      const message = redact(error instanceof Error ? error.message : String(error), secrets);
      if (json) emitJson({ type: "error", message });
      else stderr.write(`error: ${message}\n`);
      return 1;
    }
    // The session ends here (_SessionEnd, SPEC 7.5), so that its events come before the result.
    await agent.close();
    if (json) {
      emitJson({
        type: "result",
        stopReason: result.stopReason,
        rounds: result.rounds,
        toolCalls: result.toolCalls,
        objections: result.objections,
        usage: result.usage,
        durationMs: result.durationMs,
        ...(result.refusal === undefined ? {} : { refusal: result.refusal }),
      });
    } else human!.result(result);
    if (signalled !== undefined) return signalled === "SIGINT" ? 130 : 143;
    return 0;
  } finally {
    await agent.close();
  }
}

/**
 * `cli.ts hooks`: every configured server with its `_`-named tools, whether
 * `MCP_HOOK_SERVERS` enables them, and one dry-run call of each enabled hook
 * (`_meta["sprout-agent/hook"].dryRun` is true) through the agent's own registry and hook
 * runner (lib/hook-check.ts). Exit status 1 when a hook breaks the contract or a server
 * cannot start (SPEC section 11).
 */
async function hooks(args: string[]): Promise<number> {
  const parsed = parseRunArgs(args);
  if (parsed.prompt.length > 0) {
    throw new AgentError(
      "usage",
      `Unexpected argument ${JSON.stringify(parsed.prompt[0])}: hooks takes only --mcp-config FILE and --json`,
    );
  }
  const config = loadConfig(process.env, (p) => readFileSync(p, "utf8"));
  secrets = configSecrets(config);
  const servers = loadServers(parsed.mcpConfig);
  secrets = [...configSecrets(config, servers), ...configReferenced];
  const serverStderr = serverStderrOption(parsed.json);
  const warnings: string[] = [];
  const { registry, failures } = await createRegistry(servers, {
    sessionId: `hooks-dry-run-${crypto.randomUUID()}`,
    initTimeoutMs: config.mcpInitTimeoutMs,
    maxLineBytes: config.maxLineBytes,
    cwd: process.cwd(),
    env: process.env,
    onWarning: (message) => warnings.push(message),
    ...serverStderr,
  });
  try {
    const configured = servers.map((s) => s.name);
    warnings.push(...hookSetupWarnings({ configured, allow: config.hookServers, listed: registry.hookTools() }));
    const report = await checkHooks(registry, {
      configured,
      failures,
      allow: config.hookServers,
      timeoutMs: config.hookTimeoutMs,
      maxRejections: config.stopMaxRejections,
    });
    const broken = report.some((s) => s.error !== undefined || s.hooks.some((h) => h.problems.length > 0));
    if (parsed.json) {
      const value = { type: "hooks", ok: !broken, servers: report, warnings };
      stdout.write(`${redact(JSON.stringify(value), secrets)}\n`);
    } else printHookReport(report, warnings, servers.length === 0);
    return broken ? 1 : 0;
  } finally {
    await registry.close();
  }
}

/** A dry-run outcome in the words of the hook point's effect (lib/hook-points.ts). */
function dryRunOutcome(hook: string, outcome: HookOutcome): string {
  const objects = isHookPoint(hook) && HOOK_POINTS[hook].effect === "objection";
  if (outcome === "objection") return objects ? "objects" : "injects";
  if (outcome === "none") return objects ? "no objection" : "nothing to inject";
  return outcome === "timeout" ? "timed out" : "error";
}

function printHookReport(report: ServerCheck[], warnings: string[], none: boolean): void {
  const out = painter(process.stdout);
  const err = painter(process.stderr);
  const print = (line: string) => stdout.write(`${redact(line, secrets)}\n`);
  if (none) print("No MCP servers configured: give --mcp-config FILE, or add ./.mcp.json");
  let called = 0;
  let broken = 0;
  for (const s of report) {
    if (s.error !== undefined) {
      broken++;
      print(`${s.server}: ${out.red(`✗ ${s.error}`)}`);
      continue;
    }
    const state = s.enabled ? "hooks enabled" : "hooks not enabled: MCP_HOOK_SERVERS does not name it";
    print(`${s.server} ${out.dim(`(${s.hooks.length === 0 ? "no hooks" : state})`)}`);
    for (const h of s.hooks) {
      if (h.outcome !== undefined) called++;
      if (h.problems.length > 0) broken++;
      const mark = h.problems.length > 0 ? out.red("✗") : h.outcome !== undefined ? out.green("✓") : out.dim("·");
      const what = !h.point
        ? "not a hook point this agent calls (never called)"
        : h.outcome === undefined
        ? h.enabled ? "not called" : "not called (not enabled)"
        : `${dryRunOutcome(h.name, h.outcome)} in ${formatDuration(h.durationMs ?? 0)}${
          h.text === undefined ? "" : `: ${firstLine(h.text, 100)}`
        }`;
      print(`  ${mark} ${h.name} ${out.dim(what)}`);
      for (const problem of h.problems) print(`      ${out.red(problem)}`);
    }
  }
  for (const warning of warnings) stderr.write(err.yellow(`warning: ${redact(warning, secrets)}\n`));
  print(out.dim(
    `■ ${called} hook call${called === 1 ? "" : "s"} (dry run) · ${broken} ${broken === 1 ? "problem" : "problems"}`,
  ));
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    stderr.write(USAGE);
    return 2;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    stdout.write(USAGE);
    return 0;
  }
  if (command === "--version" || command === "-V") {
    stdout.write(`sprout-agent ${VERSION}\n`);
    return 0;
  }
  // `--help` counts only before `--`: after it, everything is the prompt.
  const flags = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (flags.includes("--help") || flags.includes("-h")) {
    stdout.write(USAGE);
    return 0;
  }
  if (command === "run") return await run(rest);
  if (command === "hooks") return await hooks(rest);
  if (command === "acp") {
    if (rest.length > 0) {
      throw new AgentError(
        "usage",
        `Unexpected argument ${JSON.stringify(rest[0])}: acp takes no arguments (see --help)`,
      );
    }
    const { serveAcp } = await import("./lib/acp.ts");
    // serveAcp writes process.stdout itself and resolves once what it wrote is flushed.
    return await serveAcp({ env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  }
  throw new AgentError("usage", `Unknown command ${JSON.stringify(command)}: use run, hooks or acp (see --help)`);
}

main(process.argv.slice(2)).then(
  (code) => exit(code),
  (error: unknown) => {
    const usage = error instanceof AgentError && (error.code === "config" || error.code === "usage");
    const text = usage || error instanceof AgentError
      ? (error as Error).message
      : error instanceof Error
      ? error.stack ?? error.message
      : String(error);
    stderr.write(`sprout-agent: ${redact(text, secrets)}\n`);
    exit(usage ? 2 : 1);
  },
);
