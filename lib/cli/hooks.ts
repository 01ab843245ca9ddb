/**
 * `cli.ts hooks`: every configured server with its `_`-named tools, whether
 * `MCP_HOOK_SERVERS` enables them, and one dry-run call of each enabled hook
 * (`_meta["sprout-agent/hook"].dryRun` is true) through the agent's own registry and hook
 * runner (lib/hooks/check.ts). Exit status 1 when a hook breaks the contract or a server
 * cannot start (SPEC section 11).
 * @module
 */

import { readFileSync } from "node:fs";
import process from "node:process";
import { loadConfig } from "../config/config.ts";
import type { HookOutcome } from "../conversation/events.ts";
import { checkHooks, hookSetupWarnings, isHookPoint, type ServerCheck } from "../hooks/check.ts";
import { HOOK_POINTS } from "../hooks/points.ts";
import { createRegistry } from "../mcp/registry.ts";
import { AgentError } from "../util/errors.ts";
import { configSecrets, redact } from "../util/redact.ts";
import { formatDuration } from "../util/time.ts";
import { parseRunArgs } from "./args.ts";
import { printed, stderr, stdout } from "./io.ts";
import { firstLine, painter, serverStderrOption } from "./render.ts";
import { loadServers } from "./servers.ts";

/** `cli.ts hooks ARGS…`: the dry run. Returns the exit status; throws `AgentError("usage" | "config")`. */
export async function hooks(args: string[]): Promise<number> {
  const parsed = parseRunArgs(args);
  const flag = (["allow", "ask", "deny"] as const).find((k) => parsed.permissions[k].length > 0);
  if (flag !== undefined) {
    throw new AgentError("usage", `Unexpected flag --${flag}: hooks takes only --mcp-config FILE and --json`);
  }
  if (parsed.continue || parsed.resume !== undefined) {
    const which = parsed.continue ? "--continue" : "--resume";
    throw new AgentError("usage", `Unexpected flag ${which}: hooks takes only --mcp-config FILE and --json`);
  }
  if (parsed.prompt.length > 0) {
    throw new AgentError(
      "usage",
      `Unexpected argument ${JSON.stringify(parsed.prompt[0])}: hooks takes only --mcp-config FILE and --json`,
    );
  }
  const config = loadConfig(process.env, (p) => readFileSync(p, "utf8"));
  printed.secrets = configSecrets(config);
  const { servers, referenced } = loadServers(parsed.mcpConfig);
  printed.secrets = [...configSecrets(config, servers), ...referenced];
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
      stdout().write(`${redact(JSON.stringify(value), printed.secrets)}\n`);
    } else printHookReport(report, warnings, servers.length === 0);
    return broken ? 1 : 0;
  } finally {
    await registry.close();
  }
}

/** A dry-run outcome in the words of the hook point's effect (lib/hooks/points.ts). */
function dryRunOutcome(hook: string, outcome: HookOutcome): string {
  const effect = isHookPoint(hook) ? HOOK_POINTS[hook].effect : "injection";
  const words: readonly [string, string] = ({
    objection: ["objects", "no objection"],
    injection: ["injects", "nothing to inject"],
    guidance: ["guides the summary", "no guidance"],
    log: ["injects", "nothing to inject"],
    deny: ["decides", "no opinion"],
    append: ["appends", "nothing to append"],
  } as const)[effect];
  if (outcome === "objection") return words[0];
  if (outcome === "none") return words[1];
  return outcome === "timeout" ? "timed out" : "error";
}

function printHookReport(report: ServerCheck[], warnings: string[], none: boolean): void {
  const out = painter(process.stdout);
  const err = painter(process.stderr);
  const print = (line: string) => stdout().write(`${redact(line, printed.secrets)}\n`);
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
      const tools = h.tools === undefined ? "" : ` (tools: ${h.tools.length === 0 ? "none" : h.tools.join(", ")})`;
      print(`  ${mark} ${h.name}${tools} ${out.dim(what)}`);
      for (const problem of h.problems) print(`      ${out.red(problem)}`);
    }
  }
  for (const warning of warnings) stderr().write(err.yellow(`warning: ${redact(warning, printed.secrets)}\n`));
  print(out.dim(
    `■ ${called} hook call${called === 1 ? "" : "s"} (dry run) · ${broken} ${broken === 1 ? "problem" : "problems"}`,
  ));
}
