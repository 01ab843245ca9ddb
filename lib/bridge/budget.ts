/**
 * The `_Stop` budget of one host session (SPEC 7.2), kept across the separate hook processes
 * a host spawns: a small JSON file per host session id, mode 0600, in
 * `$XDG_STATE_HOME/sprout-agent/bridge/` (else `~/.local/state/sprout-agent/bridge/`).
 * @module
 */

import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { sha256Hex } from "../util/sha256.ts";
import type { HostName } from "./hosts.ts";

/**
 * The folder of the budget files: `$XDG_STATE_HOME/sprout-agent/bridge`, else
 * `$HOME/.local/state/sprout-agent/bridge`; `undefined` when neither is an absolute path.
 * @example bridgeStateDir({ XDG_STATE_HOME: "/s" }) // "/s/sprout-agent/bridge"
 */
export function bridgeStateDir(env: Record<string, string | undefined>): string | undefined {
  const xdg = env["XDG_STATE_HOME"];
  if (xdg !== undefined && xdg.startsWith("/")) return join(xdg, "sprout-agent", "bridge");
  const home = env["HOME"];
  if (home !== undefined && home.startsWith("/")) return join(home, ".local", "state", "sprout-agent", "bridge");
  return undefined;
}

/** The `_Stop` objections one host session has used, read from and written to its file. */
export interface StopBudget {
  /** The file, or `undefined` when there is no folder for it (or the budget is kept in memory). */
  readonly file: string | undefined;
  /** Whether {@link StopBudget.spend} records anything: false when there is nowhere to count. */
  readonly kept: boolean;
  /** Objections used so far: 0 when the file is missing or unreadable. */
  used(): number;
  /** Records one more objection. Throws `Error` when the file cannot be written. */
  spend(): void;
  /** Forgets the session (its `SessionEnd`). Never throws. */
  forget(): void;
}

/**
 * The budget of `host`'s session `sessionId` under `dir`; `scope` `"subagent"` is the budget
 * its subagents' stops share (`_SubagentStop`), apart from the session's own (`_Stop`, the
 * default). The file name is a hash of the host, the id and the scope (an id is the host's, so
 * it is never a path). Writes go through a temporary file
 * and a rename, so a concurrent reader never sees half a file.
 * @example
 * const budget = stopBudget(bridgeStateDir(process.env), "claude", "abc123");
 * if (budget.used() < 3) budget.spend();
 */
export function stopBudget(
  dir: string | undefined,
  host: HostName,
  sessionId: string,
  scope: "" | "subagent" = "",
): StopBudget {
  const key = scope === "" ? `${host}\n${sessionId}` : `${host}\n${sessionId}\n${scope}`;
  const file = dir === undefined ? undefined : join(dir, `${host}-${sha256Hex(key).slice(0, 32)}.json`);
  const used = (): number => {
    if (file === undefined) return 0;
    try {
      const value = (JSON.parse(readFileSync(file, "utf8")) as { rejectionsUsed?: unknown }).rejectionsUsed;
      return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0;
    } catch {
      return 0;
    }
  };
  return {
    file,
    kept: file !== undefined,
    used,
    spend() {
      if (file === undefined || dir === undefined) return;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      const record = { host, sessionId, rejectionsUsed: used() + 1, updatedAt: new Date().toISOString() };
      writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
      renameSync(tmp, file);
    },
    forget() {
      if (file !== undefined) rmSync(file, { force: true });
    },
  };
}

/**
 * A `_Stop` budget kept in memory, in `counts` under `key`: the proxy's, whose process lives
 * as long as the host session (`cli.ts hook-proxy`). Never throws.
 * @example
 * const counts = new Map<string, number>();
 * memoryBudget(counts, "session-1").spend(); // counts.get("session-1") === 1
 */
export function memoryBudget(counts: Map<string, number>, key: string): StopBudget {
  return {
    file: undefined,
    kept: true,
    used: () => counts.get(key) ?? 0,
    spend: () => void counts.set(key, (counts.get(key) ?? 0) + 1),
    forget: () => void counts.delete(key),
  };
}
