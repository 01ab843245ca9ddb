/**
 * Helpers for the reliability tests (issue 6): the fault-injection server
 * (tests/fixtures/faults/server.mjs) as a `.mcp.json` entry or an HTTP server, the agent
 * (`cli.ts run --json`) as a child process under the current runtime, the recording fake LLM
 * with the guarantee-4 check (no request rejected), and process accounting by pid file.
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { type FakeLlm, type FakeTurn, type RecordedRequest, startFakeLlm } from "../../lib/testing/fake-llm.ts";
import { alive, type HttpFixture, startHttpCommand } from "../fixtures/mcp/helpers.ts";
import { repoRoot } from "./runtime.ts";
import type { CliRun as Run } from "./cli.ts";

export { cleanEnv as agentEnv, type CliRun as Run, runCli } from "./cli.ts";

export { alive, waitFor } from "../fixtures/mcp/helpers.ts";

/** The fault-injection server. */
export const faultServerFile = `${repoRoot}tests/fixtures/faults/server.mjs`;

/** A temp folder for one test file, removed by `cleanup()`. */
export function tempDir(): { path: string; file(name: string): string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), "sprout-faults-"));
  let n = 0;
  return {
    path,
    file: (name) => join(path, `${n++}-${name}`),
    cleanup: () => rmSync(path, { recursive: true, force: true }),
  };
}

/** A `.mcp.json` stdio entry running the fault server under `node` with `env` (FAULT_*). */
export function faultEntry(name: string, env: Record<string, string> = {}): Record<string, unknown> {
  return { command: "node", args: [faultServerFile], env: { FAULT_NAME: name, ...env } };
}

/** Writes `{mcpServers}` to a new file and returns its path. */
export function writeMcpConfig(path: string, servers: Record<string, Record<string, unknown>>): string {
  writeFileSync(path, JSON.stringify({ mcpServers: servers }));
  return path;
}

/** Starts the fault server over legacy Streamable HTTP; `url` ends in `/mcp`. */
export function startFaultHttp(env: Record<string, string> = {}): Promise<HttpFixture> {
  return startHttpCommand("node", [faultServerFile, "--http"], { ...process.env, ...env });
}

/** Every pid a fault server wrote to its pid file (its own, then its grandchildren's). */
export function pidsIn(file: string): number[] {
  try {
    return readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map(Number);
  } catch {
    return [];
  }
}

/** Pids from `files` that are still running (zombies excluded); SIGKILLs them so no test leaks. */
export function survivors(...files: string[]): number[] {
  const left = files.flatMap(pidsIn).filter(alive);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  return left;
}

/** Lines of a FAULT_LOG file, parsed. */
export function logOf(file: string): Array<{ method?: string; id?: unknown; name?: string; requestId?: unknown }> {
  try {
    return readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

/** The agent environment for the Anthropic wire against `llm`. */
export function llmEnv(llm: FakeLlm, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SPROUT_AGENT_PROVIDER: "anthropic",
    ANTHROPIC_API_KEY: "sk-ant-test",
    ANTHROPIC_MODEL: "claude-test",
    ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
    SPROUT_AGENT_LLM_TIMEOUT_SECS: "30",
    ...extra,
  };
}

/** Tallies across a test file, for docs/RELIABILITY: requests checked, and rejected (must be 0). */
export const tally = { requests: 0, rejected: 0 };

/**
 * Starts the fake LLM, runs `body`, then asserts guarantee 4: no request the agent sent was
 * rejected by the fake's validation (both wire formats are validated by the fake).
 */
export async function withLlm(
  responses: FakeTurn[] | ((request: RecordedRequest, index: number) => FakeTurn),
  body: (llm: FakeLlm) => Promise<void>,
): Promise<void> {
  const llm = await startFakeLlm({ responses });
  try {
    await body(llm);
    tally.requests += llm.requests.length;
    const rejected = llm.requests.filter((r) => r.rejected).map((r) => r.rejected);
    tally.rejected += rejected.length;
    assert.deepEqual(rejected, [], "guarantee 4: no request was rejected by the fake LLM");
  } finally {
    await llm.close();
  }
}

/** The events of one type. */
export function eventsOf(run: Run, type: string): Array<Record<string, unknown>> {
  return run.events.filter((e) => e["type"] === type);
}

/** The JSON of every message of every recorded request, for searching. */
export function sentText(llm: FakeLlm): string {
  return llm.requests.map((r) => JSON.stringify(r.body["messages"])).join("\n");
}
