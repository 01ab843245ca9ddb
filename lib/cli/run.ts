/**
 * `cli.ts run`: one prompt through the agent, printed for people (the answer on stdout, the
 * rest on stderr) or, with `--json`, as one event per line (SPEC section 11).
 * @module
 */

import process from "node:process";
import { type Agent, createAgent } from "../agent/agent.ts";
import { agentOptionsFromEnv, optionKeys } from "../agent/from-env.ts";
import type { AgentEvent, PromptResult } from "../conversation/events.ts";
import { AgentError, isAbortError } from "../util/errors.ts";
import { configSecrets, redact, redactEvent } from "../util/redact.ts";
import { parseRunArgs } from "./args.ts";
import { type LineInput, lineReader, terminalAsk } from "./ask.ts";
import { terminalElicit } from "./elicit.ts";
import { exists, readText } from "./files.ts";
import { subagentFolders } from "../subagents/folders.ts";
import { exit, isExiting, printed, stderr, stdinIsTerminal, stdout } from "./io.ts";
import { humanPrinter, innermost, serverStderrOption, visible } from "./render.ts";
import { loadServers } from "./servers.ts";
import { cliSessionStore, latestSession } from "./sessions.ts";
import { startTracing, traceFromEnv } from "./tracing.ts";

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** `cli.ts run ARGS…`: one prompt through the agent. Returns the exit status; throws `AgentError("usage" | "config")`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseRunArgs(args);
  const options = agentOptionsFromEnv(process.env, { readFile: readText });
  // --continue and --resume (SPEC 12.6): the session to go on with, from the CLI's store.
  let resume = parsed.resume;
  if (parsed.continue || resume !== undefined) {
    const store = cliSessionStore();
    options.sessionStore = store;
    resume ??= await latestSession(store, process.cwd());
  }
  printed.secrets = configSecrets(optionKeys(options));
  const { servers, referenced } = loadServers(parsed.mcpConfig);
  // Agent files of the project and the user (SPEC 13.2); their reader loads only when a folder exists.
  const folders = subagentFolders({ cwd: process.cwd(), env: process.env });
  const agentFiles = folders.some(exists)
    ? await (await import("../subagents/files.ts")).loadSubagentFiles({ cwd: process.cwd(), env: process.env })
    : { definitions: [], warnings: [] };
  printed.secrets = [...configSecrets(optionKeys(options), servers), ...referenced];
  const secrets = printed.secrets;
  let prompt: string;
  const fromStdin = parsed.prompt.length === 0 || (parsed.prompt.length === 1 && parsed.prompt[0] === "-");
  if (fromStdin) {
    if (parsed.prompt.length === 0 && process.stdin.isTTY) {
      throw new AgentError("usage", "Missing prompt: give it as arguments, or pipe it on stdin");
    }
    prompt = await readStdin();
  } else prompt = parsed.prompt.join(" ");
  if (prompt.trim() === "") throw new AgentError("usage", "Missing prompt: the prompt is empty");

  const json = parsed.json;
  const emitJson = (value: Record<string, unknown>) =>
    stdout().write(`${JSON.stringify(redactEvent(value as { type: string }, secrets))}\n`);
  // Without --json stdout is the answer alone; all else goes to stderr (render.ts).
  const printer = json ? undefined : humanPrinter();
  const serverStderr = serverStderrOption(json, printer);
  const human = printer === undefined ? undefined : {
    event: (e: AgentEvent) => printer.event(redactEvent(e, secrets)),
    result: (r: PromptResult, session: string | undefined) =>
      printer.result({
        ...r,
        ...(r.refusal === undefined ? {} : { refusal: redact(r.refusal, secrets) }),
        ...(r.halt === undefined ? {} : { halt: { ...r.halt, reason: redact(r.halt.reason, secrets) } }),
      }, session),
  };
  const warn = (message: string) => {
    if (json) emitJson({ type: "warning", message });
    else human!.event({ type: "warning", message });
  };
  const onEvent = (event: AgentEvent) => {
    // Thinking is not answer text and not one of the --json event types (SPEC section 11).
    if (json) {
      if (innermost(event).type !== "thinking-delta") emitJson(event as unknown as Record<string, unknown>);
    } else human!.event(event);
  };

  // OTEL_* (SPEC 11, tracing): the OpenTelemetry code is loaded only when they ask for traces.
  const tracing = await startTracing(process.env, warn);
  const trace = traceFromEnv(process.env);

  // The permission policy (SPEC 7.8): the flags add to the environment's lists. Someone can
  // answer an ask only on a terminal, when stdin was not the prompt and --json is off.
  const policy = options.permissions!;
  const permissions = {
    allow: [...(policy.allow ?? []), ...parsed.permissions.allow],
    ask: [...(policy.ask ?? []), ...parsed.permissions.ask],
    deny: [...(policy.deny ?? []), ...parsed.permissions.deny],
    default: policy.default ?? "auto",
  };
  // No servers, no tool calls, nothing to ask about: then the terminal is not probed (building
  // process.stdin costs Bun 5-7 ms of start-up, docs/PERFORMANCE.md).
  const person = servers.length > 0 && !json && !fromStdin && stdinIsTerminal() && process.stderr.isTTY === true;
  const lines = person && printer !== undefined
    ? lineReader(process.stdin as unknown as LineInput, () => printer.answered())
    : undefined;
  const say = (line: string) => printer!.note(redact(line, secrets));
  // A question's open line: a line printed meanwhile (another call ending) starts on a fresh one.
  const write = (text: string) => {
    if (text !== "\n") return printer!.ask(redact(text, secrets));
    stderr().write(text);
    printer!.answered();
  };
  const requestPermission = lines === undefined ? undefined : terminalAsk(say, write, lines);
  // A server's elicitation (SPEC 10) is asked on the same terminal; headless it is declined.
  const elicit = lines === undefined ? undefined : terminalElicit(say, write, lines, visible);

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
    if (isExiting()) return;
    signalled = name;
    controller.abort();
  };
  process.on("SIGINT", onSignal("SIGINT"));
  process.on("SIGTERM", onSignal("SIGTERM"));

  // A server still starting (up to SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS, 30 s) must not hold a
  // signal back: creation aborts at once. killAllServers() on the way out ends every server
  // spawned so far.
  for (const warning of agentFiles.warnings) warn(warning);
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
      permissions,
      ...(agentFiles.definitions.length === 0 ? {} : { subagents: agentFiles.definitions }),
      ...(requestPermission === undefined ? {} : { requestPermission }),
      ...(elicit === undefined ? {} : { input: { elicit } }),
      ...(resume === undefined ? {} : { resume }),
      ...(tracing === undefined ? {} : { observe: tracing.observe }),
      ...(trace === undefined ? {} : { trace }),
    });
  } catch (error) {
    await tracing?.shutdown();
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
      else printer!.error(message);
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
        ...(result.halt === undefined ? {} : { halt: result.halt }),
        ...(result.limit === undefined ? {} : { limit: result.limit }),
        // The saved session's id, for `run --resume ID` (SPEC 12.6).
        ...(agent.sessionStore === undefined ? {} : { sessionId: agent.sessionId }),
      });
    } else human!.result(result, agent.sessionStore === undefined ? undefined : agent.sessionId);
    if (signalled !== undefined) return signalled === "SIGINT" ? 130 : 143;
    return 0;
  } finally {
    await agent.close();
    // The spans are exported before the process exits.
    await tracing?.shutdown();
  }
}
