/**
 * Builds a real agent session for tests: the real wire client (Anthropic or Chat Completions)
 * against the recording fake LLM, and a real registry of fixture MCP servers
 * (tests/fixtures/agent-server.ts) spawned under the runtime running the test.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { loadConfig } from "../../lib/config/config.ts";
import type { AgentEvent, PromptResult } from "../../lib/conversation/events.ts";
import { createModel } from "../../lib/llm/model.ts";
import { AgentSession } from "../../lib/agent/loop.ts";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { inProcessMcp, type InProcessTransport } from "../../lib/mcp/in-process.ts";
import { createRegistry } from "../../lib/mcp/registry.ts";
import type { McpServerConfig, ToolRegistry } from "../../lib/mcp/types.ts";
import {
  type FakeLlm,
  type FakeLlmOptions,
  type FakeTurn,
  type RecordedRequest,
  startFakeLlm,
} from "../../lib/testing/fake-llm.ts";
import { fixtureFactory } from "../fixtures/agent-server-tools.ts";
import { repoRoot, runtime, tsCommand } from "./runtime.ts";

/** One fixture server: its name and its `FIXTURE_*` environment. */
export interface FixtureServer {
  name: string;
  env?: Record<string, string>;
}

/** What {@link startSession} returns. */
export interface TestSession {
  llm: FakeLlm;
  session: AgentSession;
  registry: ToolRegistry;
  /** Every `tools/call` the fixture servers received: `{server, tool, args, meta}`. */
  calls(): Array<{ server: string; tool: string; args: unknown; meta: Record<string, unknown> }>;
  /** Pid file of a server (when `FIXTURE_PID_FILE` was not given, one is made). */
  pidFile(server: string): string;
  dir: string;
  close(): Promise<void>;
}

/**
 * The argv that starts the fixture server: under the current runtime, except under Node, where
 * it runs under Bun. The fixture is a collaborator, not the subject (the agent is, and it runs
 * under the runner's runtime): the official SDK takes 0.45 s of CPU to load under Node and 0.25 s
 * under Bun, and the suite starts this server about fifty times per runner. The SDK's servers
 * under Node are the subject of tests/mcp-interop.test.ts and the example servers' tests.
 */
export function fixtureCommand(): { command: string; args: string[] } {
  const [command, ...args] = tsCommand(
    join(repoRoot, "tests/fixtures/agent-server.ts"),
    runtime() === "node" ? "bun" : runtime(),
  );
  return { command: command!, args };
}

/**
 * Starts the fake LLM and the fixture servers and builds a session.
 * @param options.wire which wire client the session uses
 * @param options.inProcess serve the fixtures in this process (`lib/mcp/in-process.ts`) instead of
 *   spawning them: the same client code over an in-memory channel; tools that need a process
 *   (`die`, `env`, pid files) do not work there
 * @param options.env extra agent environment (`MCP_HOOK_SERVERS`, `SPROUT_AGENT_*`)
 */
export async function startSession(options: {
  wire: "anthropic" | "openai";
  responses: FakeTurn[] | ((request: RecordedRequest, index: number) => FakeTurn);
  servers?: FixtureServer[];
  /** Other servers (for example an example hook server), placed before the fixtures. */
  extraServers?: McpServerConfig[];
  env?: Record<string, string>;
  inProcess?: boolean;
  /** Overrides of the model's retry policy (`{ baseDelayMs: 1 }` shortens the backoff). */
  retry?: { baseDelayMs?: number; maxDelayMs?: number };
  /** Further options of the fake LLM (`strictTemplate`, `requireKey`…). */
  fake?: Omit<FakeLlmOptions, "responses">;
}): Promise<TestSession> {
  const dir = mkdtempSync(join(tmpdir(), "sprout-loop-"));
  const llm = await startFakeLlm({ ...options.fake, responses: options.responses });
  const config = loadConfig(
    {
      SPROUT_AGENT_PROVIDER: options.wire,
      ANTHROPIC_API_KEY: "test-key",
      ANTHROPIC_MODEL: "claude-test",
      ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      OPENAI_COMPAT_API_KEY: "test-key",
      OPENAI_COMPAT_MODEL: "gpt-test",
      OPENAI_COMPAT_BASE_URL: llm.openaiBaseUrl,
      SPROUT_AGENT_LLM_TIMEOUT_SECS: "20",
      ...options.env,
    },
    (p) => readFileSync(p, "utf8"),
  );
  const { command, args } = fixtureCommand();
  const servers: McpServerConfig[] = (options.servers ?? [{ name: "fx" }]).map((s) => ({
    name: s.name,
    transport: {
      type: "stdio",
      command,
      args,
      env: {
        FIXTURE_LOG: join(dir, `${s.name}.log`),
        FIXTURE_PID_FILE: join(dir, `${s.name}.pid`),
        ...s.env,
      },
    },
  }));
  const sessionId = `test-${Math.random().toString(16).slice(2)}`;
  const inProcess = options.inProcess === true
    ? inProcessMcp(Object.fromEntries(servers.map((s) => [s.name, serveFixture(s.transport)])))
    : undefined;
  const { registry, failures } = await createRegistry([
    ...(options.extraServers ?? []),
    ...(inProcess?.servers ?? servers),
  ], {
    sessionId,
    env: process.env,
    initTimeoutMs: 20_000,
    maxLineBytes: config.maxLineBytes,
    ...(inProcess === undefined ? {} : { connect: inProcess.connect }),
  });
  if (failures.length > 0) throw new Error(`fixture servers failed: ${JSON.stringify(failures)}`);
  const session = new AgentSession({
    config,
    model: createModel(config, options.retry === undefined ? {} : { retry: options.retry }),
    registry,
    id: sessionId,
  });
  return {
    llm,
    session,
    registry,
    dir,
    pidFile: (server) => join(dir, `${server}.pid`),
    calls() {
      return servers.flatMap((s) => {
        let text = "";
        try {
          text = readFileSync(join(dir, `${s.name}.log`), "utf8");
        } catch {
          return [];
        }
        return text.trim().split("\n").filter(Boolean).map((line) => ({ server: s.name, ...JSON.parse(line) }));
      });
    },
    async close() {
      await registry.close();
      await llm.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Serves the fixture with this stdio configuration's `FIXTURE_*` environment in this process. */
function serveFixture(transport: McpServerConfig["transport"]) {
  const env = transport.type === "stdio" ? transport.env : {};
  return (channel: InProcessTransport) =>
    serveStdio(
      fixtureFactory({
        env,
        envNames: () => Object.keys(env),
        die: () => {
          throw new Error("the die tool needs a real process (leave inProcess off)");
        },
      }),
      { transport: channel },
    );
}

/** Runs one prompt to its end, collecting its events. */
export async function runPrompt(
  session: AgentSession,
  text: string,
  signal?: AbortSignal,
): Promise<{ events: AgentEvent[]; result: PromptResult }> {
  const run = session.prompt(text, signal === undefined ? {} : { signal });
  const events: AgentEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await run.result };
}

/** The messages of a recorded request body (Anthropic `messages` or Chat `messages`). */
export function messagesOf(body: Record<string, unknown>): Array<Record<string, unknown>> {
  return (body["messages"] as Array<Record<string, unknown>>) ?? [];
}

/** Tool names a recorded request defines, for either wire. */
export function toolNamesOf(body: Record<string, unknown>): string[] {
  const tools = (body["tools"] as Array<Record<string, unknown>> | undefined) ?? [];
  return tools.map((t) => (t["name"] as string | undefined) ?? ((t["function"] as { name: string }).name));
}

/** Closes the session after asserting that the fake LLM rejected no request (guarantee 4). */
export async function closeChecked(t: TestSession): Promise<void> {
  try {
    assert.deepEqual(
      t.llm.requests.filter((r) => r.rejected !== undefined).map((r) => r.rejected),
      [],
      "every request passes the fake's validation",
    );
  } finally {
    await t.close();
  }
}

/** Runs `body` with a new session, then {@link closeChecked}. */
export async function withSession(
  options: Parameters<typeof startSession>[0],
  body: (t: TestSession) => Promise<void>,
): Promise<void> {
  const t = await startSession(options);
  try {
    await body(t);
  } catch (error) {
    await t.close(); // the body's failure is the one to report
    throw error;
  }
  await closeChecked(t);
}

/** The `{hook, server, text}` objects injected into a recorded request body, for either wire (tool results, or text blocks when no tools are defined). */
export function injectedHooks(body: Record<string, unknown>): Array<{ hook: string; server: string; text: string }> {
  const out: Array<{ hook: string; server: string; text: string }> = [];
  const parse = (value: unknown) => {
    if (typeof value !== "string") return;
    try {
      const v = JSON.parse(value) as { hook?: unknown };
      if (typeof v === "object" && v !== null && typeof v.hook === "string") {
        out.push(v as { hook: string; server: string; text: string });
      }
    } catch {
      // not an injected hook result
    }
  };
  for (const m of messagesOf(body)) {
    if (m["role"] === "tool") parse(m["content"]);
    if (!Array.isArray(m["content"])) continue;
    for (const block of m["content"] as Array<Record<string, unknown>>) {
      if (block["type"] === "text") parse(block["text"]);
      if (block["type"] !== "tool_result") continue;
      const c = block["content"];
      if (typeof c === "string") parse(c);
      else if (Array.isArray(c)) { for (const b of c as Array<Record<string, unknown>>) parse(b["text"]); }
    }
  }
  return out;
}
