/**
 * `cli.ts sessions`: the saved sessions, newest first (SPEC section 12.6), and the store `run
 * --continue` and `--resume` read: `SPROUT_AGENT_SESSION_DIR`, else the state folder.
 * @module
 */

import process from "node:process";
import { sessionDirSetting } from "../config/config.ts";
import { AgentError } from "../util/errors.ts";
import { fileSessionStore } from "../sessions/file-store.ts";
import type { SessionInfo, SessionStore } from "../sessions/records.ts";
import { stderr, stdout } from "./io.ts";

/**
 * The CLI's session store: the folder of `SPROUT_AGENT_SESSION_DIR`, else the default one.
 * @throws {AgentError} `usage` when sessions are off; `config` for a bad variable or no home
 */
export function cliSessionStore(env: Record<string, string | undefined> = process.env): SessionStore {
  const setting = sessionDirSetting(env);
  if (setting === "off") {
    throw new AgentError("usage", "Cannot find saved sessions: SPROUT_AGENT_SESSION_DIR is off");
  }
  return fileSessionStore(setting === undefined ? {} : { dir: setting });
}

/**
 * The id of the newest session that ran in `cwd` (`run --continue`).
 * @throws {AgentError} `usage` when there is none, naming the folder
 */
export async function latestSession(store: SessionStore, cwd: string): Promise<string> {
  const { sessions } = await store.list({ cwd });
  const usable = sessions.find((s) => s.problem === undefined);
  if (usable === undefined) {
    throw new AgentError(
      "usage",
      `No session to continue in ${cwd} (transcripts in ${store.location}): run without --continue to start one`,
    );
  }
  return usable.id;
}

/** `cli.ts sessions [--json]`. Returns the exit status; throws `AgentError("usage" | "config")`. */
export async function sessions(args: string[]): Promise<number> {
  let json = false;
  for (const arg of args) {
    if (arg === "--json") json = true;
    else throw new AgentError("usage", `Unexpected argument ${JSON.stringify(arg)}: sessions takes only --json`);
  }
  const store = cliSessionStore();
  const listed = await store.list();
  for (const warning of listed.warnings) stderr().write(`warning: ${warning}\n`);
  if (json) {
    for (const s of listed.sessions) stdout().write(`${JSON.stringify(s)}\n`);
    return 0;
  }
  if (listed.sessions.length === 0) {
    stderr().write(`No sessions in ${store.location}\n`);
    return 0;
  }
  for (const s of listed.sessions) stdout().write(`${sessionLine(s)}\n`);
  return 0;
}

/** One session for people: id, last update (UTC, to the minute), size, folder and title. */
export function sessionLine(s: SessionInfo): string {
  const when = s.updated === "" ? "(unknown)       " : s.updated.slice(0, 16).replace("T", " ");
  const what = s.problem === undefined ? JSON.stringify(s.title) : `(cannot resume: ${s.problem})`;
  return `${s.id}  ${when}  ${formatBytes(s.bytes).padStart(8)}  ${s.cwd === "" ? "(unknown folder)" : s.cwd}  ${what}`;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
