/**
 * A session transcript as data (SPEC section 12): the records a store keeps, the store
 * interface every store implements, and the one function that turns records back into a
 * history the next request can send. Stores (`file-store.ts`, `memory-store.ts`, the Redis store
 * of `stores/redis.ts`) only keep records in order; what they mean is decided here, once.
 * @module
 */

import type { HistoryItem, StopReason, Usage } from "../conversation/types.ts";

/** The transcript format's version, in every `session` record. */
export const SESSION_FORMAT_VERSION = 1;

/** A session id a store accepts: 1 to 128 letters, digits, `_`, `-` or `.` (not starting with `.`). */
export const SESSION_ID_PATTERN: RegExp = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/**
 * The session's counters that outlive a process: the `_Stop` budget used, the prompts run, the
 * first prompt (for summaries), the summaries made, and the person's "always" answers.
 */
export interface SessionCounters {
  /** `_Stop` objections used (never reset, SPEC 7.2). */
  stopRejections: number;
  /** Prompts started. */
  prompts: number;
  /** The session's first prompt, kept for compaction summaries. */
  originalTask?: string;
  /** Summary compactions done (at most `SPROUT_AGENT_MAX_HANDOFFS`). */
  handoffs: number;
  /** "Always" permission answers by qualified tool name (SPEC 7.8). */
  permissions: Record<string, "allow" | "deny">;
}

/**
 * One line of a transcript (SPEC section 12.2). Every record has `type` first and `at`, an ISO
 * 8601 time. A reader skips types it does not know.
 * - `session`: the first record: id, `cwd`, creation time, title (the first prompt, cut; `""`
 *   when the session was created before its first prompt).
 * - `items`: history items appended, in order.
 * - `result`: one tool result, written as its call ends (parallel calls end in any order).
 * - `context`: the history was replaced (a compaction, or a refused prompt forgotten).
 * - `state`: the session's counters after a change.
 * - `end`: a prompt ended, with its stop reason and usage.
 * - `subagent`: a subagent's history, by the parent's tool call that ran it (SPEC 13.7).
 */
export type SessionRecord =
  | {
    type: "session";
    at: string;
    version: number;
    id: string;
    cwd: string;
    title: string;
    /** `sprout-agent/<version>`. */
    agent: string;
  }
  | { type: "items"; at: string; items: HistoryItem[] }
  | { type: "result"; at: string; item: Extract<HistoryItem, { role: "tool" }> }
  | { type: "context"; at: string; reason: "compaction" | "refusal"; items: HistoryItem[] }
  | ({ type: "state"; at: string } & SessionCounters)
  | {
    /** A subagent's whole history, written when it ends (SPEC 13.7); restore leaves it out of the history. */
    type: "subagent";
    at: string;
    /** The parent's tool call that ran it. */
    toolCallId: string;
    /** The child: `{session, id, name, depth, toolCallId}`. */
    agent: { session: string; id: string; name: string; depth: number; toolCallId: string };
    items: HistoryItem[];
    stopReason: StopReason | "error";
  }
  | {
    type: "end";
    at: string;
    prompt: number;
    stopReason: StopReason;
    usage: Usage;
    rounds: number;
    toolCalls: number;
  };

/** One session as a store lists it (`sessions`, ACP `session/list`). */
export interface SessionInfo {
  /** The session id (also the file's name, for the file store). */
  id: string;
  /** The working folder it ran in, absolute; `""` when the transcript does not say. */
  cwd: string;
  /** The first prompt, cut to {@link MAX_TITLE_CHARS} characters; `""` before the first prompt. */
  title: string;
  /** When it was created, ISO 8601; `""` when unknown. */
  created: string;
  /** When it was last written, ISO 8601. */
  updated: string;
  /** The transcript's size in bytes. */
  bytes: number;
  /** Why it cannot be resumed, when it cannot (its first record is damaged, …). */
  problem?: string;
}

/** What a store read back: the records in order and what was skipped, as warnings. */
export interface SessionRead {
  /** The records that could be read, in order. */
  records: SessionRecord[];
  /** One sentence per skipped line or record (`… line 7 is not JSON: skipped`). */
  warnings: string[];
}

/**
 * Where transcripts are kept. A store keeps each session's records in order and lets one
 * writer at a time append to a session; it never interprets them ({@link restoreSession} does).
 * Implementations: `fileSessionStore` (the default), `memorySessionStore`, and the Redis store
 * (`sprout-agent/stores/redis`, outside the core).
 */
export interface SessionStore {
  /** Where the transcripts are, for messages (`/home/me/.local/state/sprout-agent/sessions`, `redis://…`). */
  readonly location: string;
  /**
   * Claims session `id` for writing; `existing` says whether it must already have a transcript
   * (a resume) or must not (a new session). The claim holds until `close`.
   * @throws {AgentError} `session` when the id is not {@link SESSION_ID_PATTERN}, another writer
   *   holds the session, a new session's id already has a transcript, or a resumed one has none
   */
  claim(id: string, options: { existing: boolean }): Promise<SessionWriter>;
  /** The records of session `id` in order, or `undefined` when it has no transcript. */
  read(id: string): Promise<SessionRead | undefined>;
  /**
   * Every session, newest update first, derived from the transcripts themselves (no index);
   * `cwd` keeps only those that ran there. A transcript that cannot be read is listed with its
   * `problem`, never hiding the others.
   */
  list(options?: { cwd?: string }): Promise<{ sessions: SessionInfo[]; warnings: string[] }>;
}

/** The one writer of a claimed session. */
export interface SessionWriter {
  /** Appends records in order; resolves once they are written (the file store: in the OS). */
  append(records: readonly SessionRecord[]): Promise<void>;
  /** Releases the claim; later appends throw. Idempotent. */
  close(): Promise<void>;
}

/** Longest title kept in a `session` record, in characters. */
export const MAX_TITLE_CHARS = 200;

/** The text a call gets when the transcript has no result for it (the process stopped while it ran). */
export const INTERRUPTED_RESULT =
  "interrupted: the agent stopped before this tool call returned (the session was resumed from its transcript)";

/** A session brought back from its records: what {@link restoreSession} returns. */
export interface RestoredSession {
  /** The history as the next request sends it: valid by SPEC section 6 (repaired where needed). */
  history: HistoryItem[];
  /** The counters of the last `state` record (zeros when there is none). */
  counters: SessionCounters;
  /** The `session` record, when there was one. */
  header?: Extract<SessionRecord, { type: "session" }>;
  /** Repairs made and records skipped, one sentence each. */
  warnings: string[];
}

/**
 * Rebuilds a session from its records: `items` append, `result` appends a tool result,
 * `context` replaces the history, `state` sets the counters; then the history is repaired so
 * that it is valid for the next request: each call is followed by exactly one result, in call
 * order (a result written as its call ended is moved there; a call without one gets an
 * {@link INTERRUPTED_RESULT} error result), and a result without its call is dropped.
 * @example
 * const { history } = restoreSession([{ type: "items", at: "…", items: [{ role: "user", text: "hi" }] }]);
 */
export function restoreSession(records: readonly SessionRecord[]): RestoredSession {
  let history: HistoryItem[] = [];
  const counters: SessionCounters = { stopRejections: 0, prompts: 0, handoffs: 0, permissions: {} };
  const warnings: string[] = [];
  let header: RestoredSession["header"];
  records.forEach((record, i) => {
    const problem = recordProblem(record);
    if (problem !== undefined) {
      warnings.push(`record ${i + 1} (${JSON.stringify(String(record.type)).slice(0, 40)}) ${problem}: skipped`);
      return;
    }
    switch (record.type) {
      case "session":
        header ??= record;
        break;
      case "items":
        history.push(...record.items);
        break;
      case "result":
        history.push(record.item);
        break;
      case "context":
        history = [...record.items];
        break;
      case "state":
        counters.stopRejections = record.stopRejections;
        counters.prompts = record.prompts;
        counters.handoffs = record.handoffs;
        counters.permissions = { ...record.permissions };
        if (record.originalTask === undefined) delete counters.originalTask;
        else counters.originalTask = record.originalTask;
        break;
    }
  });
  const repaired = repairHistory(history);
  return {
    history: repaired.history,
    counters,
    ...(header === undefined ? {} : { header }),
    warnings: [...warnings, ...repaired.warnings],
  };
}

/**
 * What is wrong with a record of a known type, or `undefined` when it can be used (a type this
 * version does not know is ignored, not wrong). A transcript is data from disk or a network
 * store: a record that would put a malformed item into the history is skipped, never sent.
 */
export function recordProblem(record: unknown): string | undefined {
  const r = record as Record<string, unknown>;
  if (typeof r !== "object" || r === null || Array.isArray(r)) return "is not an object";
  const items = (value: unknown): string | undefined => {
    if (!Array.isArray(value)) return "has no items array";
    const bad = value.findIndex((item) => itemProblem(item) !== undefined);
    return bad === -1 ? undefined : `item ${bad + 1} ${itemProblem(value[bad])}`;
  };
  switch (r["type"]) {
    case "session":
      return typeof r["id"] === "string" && typeof r["cwd"] === "string" && typeof r["title"] === "string"
        ? undefined
        : "lacks its id, cwd or title";
    case "items":
    case "context":
      return items(r["items"]);
    case "subagent": {
      const agent = r["agent"] as Record<string, unknown> | undefined;
      if (typeof r["toolCallId"] !== "string" || typeof agent !== "object" || agent === null) {
        return "lacks its toolCallId or agent";
      }
      if (typeof agent["id"] !== "string" || typeof agent["name"] !== "string") return "names no agent id or name";
      return items(r["items"]);
    }
    case "result": {
      const item = r["item"] as { role?: unknown } | undefined;
      return item?.role === "tool" ? itemProblem(item) : "has no tool result";
    }
    case "state": {
      const counts = ["stopRejections", "prompts", "handoffs"].every((k) =>
        Number.isSafeInteger(r[k]) && (r[k] as number) >= 0
      );
      const permissions = r["permissions"];
      const answers = typeof permissions === "object" && permissions !== null && !Array.isArray(permissions) &&
        Object.values(permissions).every((v) => v === "allow" || v === "deny");
      const task = r["originalTask"] === undefined || typeof r["originalTask"] === "string";
      return counts && answers && task ? undefined : "has counters of the wrong shape";
    }
    default:
      return undefined;
  }
}

/** What is wrong with a history item (SPEC 6), or `undefined`. */
function itemProblem(value: unknown): string | undefined {
  const item = value as Record<string, unknown>;
  if (typeof item !== "object" || item === null) return "is not an object";
  const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
  switch (item["role"]) {
    case "user":
      return typeof item["text"] === "string" ? undefined : "is a user item without text";
    case "assistant": {
      const calls = item["toolCalls"];
      const callsOk = Array.isArray(calls) &&
        calls.every((c) =>
          isObject(c) && typeof c.id === "string" && c.id !== "" && typeof c.name === "string" &&
          /^[a-zA-Z0-9_-]{1,64}$/.test(c.name) && isObject(c.arguments)
        );
      const native = item["native"];
      const content = (native as { content?: unknown } | undefined)?.content;
      const nativeOk = native === undefined ||
        (isObject(native) && typeof (native as { provider?: unknown }).provider === "string" &&
          Array.isArray(content) && content.every(isObject));
      return typeof item["text"] === "string" && callsOk && nativeOk ? undefined : "is a malformed assistant item";
    }
    case "tool": {
      const content = item["content"];
      const blocksOk = Array.isArray(content) && content.length > 0 &&
        content.every((b) =>
          isObject(b) &&
          ((b.type === "text" && typeof b.text === "string") ||
            (b.type === "image" && typeof b.mimeType === "string" && typeof b.data === "string"))
        );
      return typeof item["toolCallId"] === "string" && typeof item["isError"] === "boolean" && blocksOk
        ? undefined
        : "is a malformed tool result";
    }
    default:
      return `has the unknown role ${JSON.stringify(item["role"])}`;
  }
}

/**
 * `history` with every call followed by exactly one result, in call order (SPEC 6): results are
 * found by call id wherever they are; a missing one becomes an {@link INTERRUPTED_RESULT} error
 * result; a result whose call is not in history, or a second result for one call, is dropped.
 */
export function repairHistory(history: readonly HistoryItem[]): { history: HistoryItem[]; warnings: string[] } {
  const results = new Map<string, Extract<HistoryItem, { role: "tool" }>>();
  const calls = new Set<string>();
  for (const item of history) {
    if (item.role === "tool" && !results.has(item.toolCallId)) results.set(item.toolCallId, item);
    if (item.role === "assistant") { for (const call of item.toolCalls) calls.add(call.id); }
  }
  const out: HistoryItem[] = [];
  const warnings: string[] = [];
  let interrupted = 0;
  const seen = new Set<string>();
  let started = false;
  for (const original of history) {
    let item = original;
    // A history starts with a user item, and a user item has text: APIs refuse anything else.
    if (item.role === "user" && item.text.trim() === "") {
      warnings.push("dropped a user item without text");
      continue;
    }
    if (item.role === "tool") {
      if (!calls.has(item.toolCallId)) warnings.push(`dropped a tool result without its call (${item.toolCallId})`);
      continue;
    }
    if (!started && item.role !== "user") {
      warnings.push(`dropped an ${item.role} item before the first user item`);
      continue;
    }
    started = true;
    if (item.role === "assistant") {
      // A call id seen before (a damaged or hand-edited transcript) would repeat in the request.
      const fresh = item.toolCalls.filter((c) => {
        if (seen.has(c.id)) return false;
        seen.add(c.id);
        return true;
      });
      if (fresh.length < item.toolCalls.length) {
        warnings.push(`dropped ${item.toolCalls.length - fresh.length} repeated tool call id(s)`);
        item = { ...item, toolCalls: fresh };
      }
      // An assistant item with nothing to send would be an empty message, which APIs refuse.
      if (item.text.trim() === "" && item.toolCalls.length === 0 && (item.native?.content.length ?? 0) === 0) continue;
    }
    out.push(item);
    if (item.role !== "assistant") continue;
    for (const call of item.toolCalls) {
      const result = results.get(call.id);
      if (result !== undefined) {
        out.push(result);
        results.delete(call.id);
      } else {
        interrupted++;
        out.push({
          role: "tool",
          toolCallId: call.id,
          content: [{ type: "text", text: INTERRUPTED_RESULT }],
          isError: true,
        });
      }
    }
  }
  if (interrupted > 0) {
    warnings.push(`${interrupted} tool call${interrupted === 1 ? "" : "s"} had no result: answered as interrupted`);
  }
  return { history: out, warnings };
}

/**
 * Parses a transcript's text, one JSON record per line. A line that is not a JSON object with
 * a string `type` is skipped with a warning naming its number; a last line without its newline
 * (a write cut short) is skipped the same way. Never throws.
 * @param name the transcript's name in warnings (`session "abc"`)
 */
export function parseRecords(text: string, name: string): SessionRead {
  const records: SessionRecord[] = [];
  const warnings: string[] = [];
  const lines = text.split("\n");
  const complete = text.endsWith("\n") || text === "";
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    const last = i === lines.length - 1;
    try {
      const value = JSON.parse(line) as unknown;
      if (typeof value !== "object" || value === null || typeof (value as { type?: unknown }).type !== "string") {
        throw new Error("not a record");
      }
      records.push(value as SessionRecord);
    } catch {
      warnings.push(
        last && !complete
          ? `${name}: its last line was cut short (${line.length} characters): skipped`
          : `${name}: line ${i + 1} is not a JSON record: skipped`,
      );
    }
  });
  return { records, warnings };
}

/** A record's JSON line (with its newline). */
export function recordLine(record: SessionRecord): string {
  return `${JSON.stringify(record)}\n`;
}

/**
 * What a list shows of one transcript, from its first records: the `session` record (anywhere
 * among them) gives `cwd`, `title` and `created`; without one, the first user item gives the
 * title and `problem` says the record is missing.
 */
export function describeSession(
  id: string,
  read: SessionRead,
  file: { updated: string; bytes: number },
): SessionInfo {
  const header = read.records.find((r) => r.type === "session" && recordProblem(r) === undefined) as
    | Extract<SessionRecord, { type: "session" }>
    | undefined;
  const info: SessionInfo = {
    id,
    cwd: header?.cwd ?? "",
    title: header?.title ?? "",
    created: header?.at ?? "",
    updated: file.updated,
    bytes: file.bytes,
  };
  // A session created before its first prompt has an empty title: the first prompt is the title.
  if (info.title === "") {
    const first = read.records.flatMap((r) => (r.type === "items" && recordProblem(r) === undefined ? r.items : []))
      .find((i) => i.role === "user");
    if (first?.role === "user") info.title = titleOf(first.text);
  }
  if (header === undefined && read.records.length === 0) info.problem = read.warnings[0] ?? "the transcript is empty";
  return info;
}

/** The title of a session whose first prompt is `text`: one line, at most {@link MAX_TITLE_CHARS}. */
export function titleOf(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= MAX_TITLE_CHARS ? line : `${line.slice(0, MAX_TITLE_CHARS - 1)}…`;
}
