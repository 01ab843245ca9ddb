/**
 * How stdio servers end, in the parts needed before any server starts: the process groups of
 * the live servers, killed when the agent exits ({@link killAllServers}, which the CLI calls on
 * every exit), and the error for a server that exited ({@link exitError}). The rest of the
 * stdio client (stdio.ts, stdio-peer.ts, and with them `node:child_process`) is loaded by the
 * first stdio server's spawn, so a run without one never loads it (issue 21). SPEC section 10.
 * @module
 */

import process from "node:process";
import { AgentError } from "../util/errors.ts";
import type { McpExitInfo } from "./types.ts";

/** The process group ids (the leaders' pids) of the stdio servers still alive in this process. */
export const liveGroups: Set<number> = new Set();

/** Sends `signal` to the process group `pid`; a group already gone is no error. */
export function killGroup(pid: number, signal: "SIGKILL" | "SIGTERM"): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Kills (SIGKILL) the process group of every stdio server still alive in this process.
 * Installed on `process` `exit` automatically; the CLI also calls it from its SIGINT and
 * SIGTERM handlers, since a signal that kills the runtime skips `exit` handlers.
 */
export function killAllServers(): void {
  for (const pid of liveGroups) killGroup(pid, "SIGKILL");
  liveGroups.clear();
}

/**
 * The error for a server that exited: `server exited (code N); stderr:\n…`, prefixed with
 * the failed request when `method` is given.
 */
export function exitError(name: string, info: McpExitInfo, method?: string): AgentError {
  const how = info.signal ? `signal ${info.signal}` : `code ${info.code}`;
  const tail = info.stderrTail.trim();
  const prefix = method ? `Request "${method}" to server "${name}" failed: ` : "";
  return new AgentError("mcp", `${prefix}server exited (${how})${tail ? `; stderr:\n${tail}` : ""}`);
}
