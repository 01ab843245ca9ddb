/**
 * The loop's side of a transcript: at each checkpoint it writes what changed since the last
 * one (SPEC section 12.3): new history items as one `items` record, a history that was
 * replaced (a compaction, a refused prompt forgotten) as one `context` record, tool results as
 * each call ends, the counters when they change, and an `end` record per prompt. Known secrets
 * are redacted from every record. A store that fails is reported once and the session goes on
 * without it: a transcript never ends a turn.
 * @module
 */

import type { HistoryItem } from "../conversation/types.ts";
import type { PromptResult } from "../conversation/events.ts";
import { redactValue } from "../util/redact.ts";
import { VERSION } from "../util/version.ts";
import {
  SESSION_FORMAT_VERSION,
  type SessionCounters,
  type SessionRecord,
  type SessionWriter,
  titleOf,
} from "./records.ts";

/** Options of {@link Transcript}. */
export interface TranscriptOptions {
  /** The claimed session's writer (`SessionStore.claim`). */
  writer: SessionWriter;
  /** The session id, for the `session` record. */
  id: string;
  /** The working folder, for the `session` record. */
  cwd: string;
  /** Values never written (API keys, header values, credential variables). */
  secrets?: readonly string[];
  /** The history the store already holds (a resumed session's), by identity; default none. */
  written?: readonly HistoryItem[];
  /** The counters the store already holds; default none. */
  counters?: SessionCounters;
  /** Whether the store holds a `session` record; default true when `written` is given. */
  headed?: boolean;
  /** Called once when a write fails; the transcript then stops writing. */
  onWarning?: (message: string) => void;
  /** Milliseconds clock for the records' `at`; default `Date.now`. */
  now?: () => number;
  /** Where the store keeps it, for the warning. */
  location?: string;
}

/** Writes one session's records as the loop reaches its checkpoints. */
export class Transcript {
  readonly #options: TranscriptOptions;
  readonly #secrets: string[];
  /** The history the store holds, item by item (by identity). */
  #written: HistoryItem[];
  /** Results written as their call ended, not yet in the history (by call id). */
  readonly #results = new Set<string>();
  #counters: string;
  #headed: boolean;
  #failed = false;
  #queue: Promise<void> = Promise.resolve();

  constructor(options: TranscriptOptions) {
    this.#options = options;
    this.#secrets = (options.secrets ?? []).filter((s) => s !== "");
    this.#written = [...(options.written ?? [])];
    this.#counters = options.counters === undefined ? "" : JSON.stringify(options.counters);
    this.#headed = options.headed ?? options.written !== undefined;
  }

  /**
   * Writes what changed in `history` and `counters` since the last checkpoint; resolves once
   * it is written (or the store has failed, which is reported once).
   */
  /**
   * Writes the `session` record of a new session, so that it exists, can be listed and can
   * be resumed before its first prompt (an editor creates a session, then reconnects to it).
   * Its title is empty until then: a list takes the first prompt's text instead.
   */
  begin(): Promise<void> {
    if (this.#headed) return this.#queue;
    this.#headed = true;
    return this.#write([this.#header("")]);
  }

  #header(title: string): SessionRecord {
    return {
      type: "session",
      at: this.#at(),
      version: SESSION_FORMAT_VERSION,
      id: this.#options.id,
      cwd: this.#options.cwd,
      title,
      agent: `sprout-agent/${VERSION}`,
    };
  }

  checkpoint(history: readonly HistoryItem[], counters: SessionCounters): Promise<void> {
    const records: SessionRecord[] = [];
    const at = this.#at();
    if (!this.#headed) {
      const first = history.find((i) => i.role === "user");
      this.#headed = true;
      records.push(this.#header(first?.role === "user" ? titleOf(first.text) : ""));
    }
    const written = this.#written;
    const appended = history.length >= written.length && written.every((item, i) => history[i] === item);
    if (appended) {
      const items = history.slice(written.length).filter((item) => {
        if (item.role !== "tool" || !this.#results.has(item.toolCallId)) return true;
        this.#results.delete(item.toolCallId);
        return false;
      });
      if (items.length > 0) records.push({ type: "items", at, items: [...items] });
    } else {
      const reason = history.length < written.length && history.every((item, i) => written[i] === item)
        ? "refusal"
        : "compaction";
      records.push({ type: "context", at, reason, items: [...history] });
      this.#results.clear();
    }
    this.#written = [...history];
    const state = JSON.stringify(counters);
    if (state !== this.#counters) {
      this.#counters = state;
      records.push({ type: "state", at, ...structuredClone(counters) });
    }
    return this.#write(records);
  }

  /** Writes one tool result as its call ends, before the history holds it. */
  result(item: Extract<HistoryItem, { role: "tool" }>): Promise<void> {
    this.#results.add(item.toolCallId);
    return this.#write([{ type: "result", at: this.#at(), item }]);
  }

  /** Writes the `end` record of prompt number `prompt`. */
  end(prompt: number, result: PromptResult): Promise<void> {
    return this.#write([{
      type: "end",
      at: this.#at(),
      prompt,
      stopReason: result.stopReason,
      usage: { ...result.usage },
      rounds: result.rounds,
      toolCalls: result.toolCalls,
    }]);
  }

  /** Writes a subagent's history when it ends (SPEC 13.7): a `subagent` record. */
  subagent(
    run: Pick<Extract<SessionRecord, { type: "subagent" }>, "toolCallId" | "agent" | "items" | "stopReason">,
  ): Promise<void> {
    return this.#write([{
      type: "subagent",
      at: this.#at(),
      toolCallId: run.toolCallId,
      agent: { ...run.agent },
      items: [...run.items],
      stopReason: run.stopReason,
    }]);
  }

  /** Resolves when every write so far has settled. */
  flush(): Promise<void> {
    return this.#queue;
  }

  /** Waits for the writes, then releases the session's claim. Never rejects. */
  async close(): Promise<void> {
    await this.#queue;
    await this.#options.writer.close().catch(() => {});
  }

  #at(): string {
    return new Date((this.#options.now ?? Date.now)()).toISOString();
  }

  #write(records: SessionRecord[]): Promise<void> {
    if (records.length === 0 || this.#failed) return this.#queue;
    const safe = this.#secrets.length === 0 ? records : redactValue(records, this.#secrets, { patterns: false });
    this.#queue = this.#queue.then(() => this.#options.writer.append(safe)).catch((error: unknown) => {
      if (this.#failed) return;
      this.#failed = true;
      const where = this.#options.location === undefined ? "" : ` in ${this.#options.location}`;
      this.#options.onWarning?.(
        `Cannot write the session transcript${where}: ${(error as Error).message}; the session goes on without it`,
      );
    });
    return this.#queue;
  }
}
