/**
 * A session store in this process's memory: for tests, and for embedders that keep nothing on
 * disk but still want `resume` within the process. Records are kept as their JSON lines, so a
 * read returns copies, exactly as a store on disk would.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import {
  describeSession,
  parseRecords,
  recordLine,
  SESSION_ID_PATTERN,
  type SessionInfo,
  type SessionRead,
  type SessionRecord,
  type SessionStore,
  type SessionWriter,
} from "./records.ts";

interface Kept {
  lines: string[];
  updated: number;
}

/**
 * A store that keeps every transcript in memory until the process ends.
 * @example
 * const store = memorySessionStore();
 * const agent = await createAgent({ model, sessionStore: store });
 */
export function memorySessionStore(options: { now?: () => number } = {}): SessionStore {
  const now = options.now ?? Date.now;
  const sessions = new Map<string, Kept>();
  /** Ids claimed by a writer now (a new session has no transcript until its first write). */
  const claimed = new Set<string>();
  return {
    location: "memory",
    claim(id, { existing }) {
      if (typeof id !== "string" || !SESSION_ID_PATTERN.test(id)) {
        return Promise.reject(new AgentError("session", `Invalid session id ${JSON.stringify(id)}`));
      }
      const kept = sessions.get(id);
      if (existing && kept === undefined) {
        return Promise.reject(new AgentError("session", `No session ${JSON.stringify(id)} in memory`));
      }
      if (!existing && kept !== undefined) {
        return Promise.reject(
          new AgentError("session", `Session ${JSON.stringify(id)} already has a transcript in memory`),
        );
      }
      if (claimed.has(id)) {
        return Promise.reject(new AgentError("session", `Session ${JSON.stringify(id)} is in use by another agent`));
      }
      claimed.add(id);
      const entry: Kept = kept ?? { lines: [], updated: now() };
      let closed = false;
      const writer: SessionWriter = {
        append(records: readonly SessionRecord[]) {
          if (closed) return Promise.reject(new AgentError("session", "Cannot write the transcript: it is closed"));
          if (records.length === 0) return Promise.resolve();
          if (!sessions.has(id)) sessions.set(id, entry);
          entry.lines.push(...records.map(recordLine));
          entry.updated = now();
          return Promise.resolve();
        },
        close() {
          if (!closed) claimed.delete(id);
          closed = true;
          return Promise.resolve();
        },
      };
      return Promise.resolve(writer);
    },
    read(id): Promise<SessionRead | undefined> {
      const kept = sessions.get(id);
      return Promise.resolve(kept === undefined ? undefined : parseRecords(kept.lines.join(""), `session "${id}"`));
    },
    list(options = {}) {
      const out: SessionInfo[] = [];
      for (const [id, kept] of sessions) {
        const text = kept.lines.join("");
        const info = describeSession(id, parseRecords(text, `session "${id}"`), {
          updated: new Date(kept.updated).toISOString(),
          bytes: new TextEncoder().encode(text).length,
        });
        if (options.cwd === undefined || info.cwd === options.cwd) out.push(info);
      }
      out.sort((a, b) => (a.updated < b.updated ? 1 : a.updated > b.updated ? -1 : 0));
      return Promise.resolve({ sessions: out, warnings: [] });
    },
  };
}
