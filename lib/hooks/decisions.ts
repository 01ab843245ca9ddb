/**
 * Typed hook answers (SPEC section 7.7): what a hook may return in `structuredContent` (or an
 * in-process hook as an object) besides plain text, in the vocabulary Claude Code, Codex and
 * Copilot CLI share, and how the answers of several hooks for one tool call combine.
 * @module
 */

import type { HookDecision } from "../conversation/events.ts";
import { clampUtf8 } from "../util/utf8.ts";

export type { HookDecision } from "../conversation/events.ts";

/** The keys a typed answer may hold; an object with none of them is no typed answer. */
const DECISION_KEYS = [
  "decision",
  "reason",
  "updatedInput",
  "additionalContext",
  "updatedResult",
  "continue",
  "stopReason",
  "systemMessage",
] as const;

/** Largest text field of a typed answer kept, in UTF-8 bytes (as hook text, SPEC section 4.3). */
const MAX_FIELD_BYTES = 16 * 1024;

/**
 * Reads a typed answer out of `value` (a result's `structuredContent` or an in-process hook's
 * return value). Returns `undefined` when `value` is not an object with at least one known key
 * (then the hook's text governs, as before); otherwise the answer with every well-typed field
 * and `problems` naming each field that was ignored for its type or value. Text fields are cut
 * to 16 KiB of UTF-8.
 * @example
 * parseDecision({ decision: "deny", reason: "no" }) // { decision: { decision: "deny", reason: "no" }, problems: [] }
 * parseDecision({ decision: "maybe" }) // { decision: {}, problems: ['"decision" must be one of allow, deny, ask, block'] }
 */
export function parseDecision(value: unknown): { decision: HookDecision; problems: string[] } | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (!DECISION_KEYS.some((key) => Object.hasOwn(record, key))) return undefined;
  const decision: HookDecision = {};
  const problems: string[] = [];
  // Another agent's words (Claude Code's hookSpecificOutput, say) are not read here: say so.
  const unknown = Object.keys(record).filter((key) => !(DECISION_KEYS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    problems.push(
      `${unknown.map((k) => JSON.stringify(k)).join(", ")} ${
        unknown.length === 1 ? "is" : "are"
      } not a field of a typed answer`,
    );
  }
  const text = (key: "reason" | "additionalContext" | "updatedResult" | "stopReason" | "systemMessage") => {
    const v = record[key];
    if (v === undefined) return;
    if (typeof v === "string") decision[key] = clampUtf8(v, MAX_FIELD_BYTES, "\n[truncated]");
    else problems.push(`"${key}" must be a string`);
  };
  if (record.decision !== undefined) {
    const d = record.decision;
    if (d === "allow" || d === "deny" || d === "ask" || d === "block") decision.decision = d;
    else problems.push(`"decision" must be one of allow, deny, ask, block`);
  }
  text("reason");
  text("additionalContext");
  text("updatedResult");
  text("stopReason");
  text("systemMessage");
  if (record.updatedInput !== undefined) {
    const u = record.updatedInput;
    const json = typeof u === "object" && u !== null && !Array.isArray(u) ? asJson(u) : undefined;
    if (json !== undefined) decision.updatedInput = json;
    else problems.push(`"updatedInput" must be a JSON object`);
  }
  if (record.continue !== undefined) {
    if (typeof record.continue === "boolean") decision.continue = record.continue;
    else problems.push(`"continue" must be a boolean`);
  }
  return { decision, problems };
}

/**
 * `value` as the JSON it would travel as (what the tool will be sent), or `undefined` when it
 * is none: an in-process hook can return cycles, BigInts, a `toJSON` that throws or nesting
 * too deep to serialise, which would otherwise throw later, in the middle of a tool round.
 */
function asJson(value: object): Record<string, unknown> | undefined {
  try {
    const copy: unknown = JSON.parse(JSON.stringify(value));
    return typeof copy === "object" && copy !== null && !Array.isArray(copy)
      ? copy as Record<string, unknown>
      : undefined;
  } catch {
    return undefined;
  }
}

/** One hook's say on one tool call, as the runner collected it. */
export interface ToolCallVerdict {
  /** The server (or in-process group) that answered. */
  server: string;
  /** Its decision: plain non-blank text counts as `deny` with that text as the reason. */
  decision: HookDecision;
}

/** What the `_PreToolUse` hooks decided for one call, combined (SPEC section 7.6). */
export interface CombinedPreToolUse {
  /** `deny` beats `ask` beats `allow`; `none` when no hook had an opinion. */
  decision: "allow" | "deny" | "ask" | "none";
  /** For `deny` and `ask`: the reason; of several hooks, each `server: reason`, joined with `; `. */
  reason?: string;
  /** The servers whose answer decided (every denier, or every asker). */
  servers: string[];
  /** The one rewrite of the arguments, when exactly one hook (or several identically) rewrote them. */
  updatedInput?: Record<string, unknown>;
  /** Every `additionalContext`, in the hooks' order. */
  context: Array<{ server: string; text: string }>;
}

/**
 * Combines the `_PreToolUse` answers of one call, in configuration order (servers, then
 * in-process groups): any `deny` denies, else any `ask` asks, else any `allow` allows, else
 * `none`. Two hooks that rewrite the arguments differently are a conflict: the call is denied
 * with a reason that names both (the agents that let the last hook to finish win are
 * nondeterministic; this is not). A denied call keeps no rewrite.
 * @example
 * combinePreToolUse([{ server: "a", decision: { decision: "ask" } }, { server: "b", decision: { decision: "deny", reason: "no" } }])
 * // { decision: "deny", reason: "no", servers: ["b"], context: [] }
 */
export function combinePreToolUse(verdicts: readonly ToolCallVerdict[]): CombinedPreToolUse {
  const context = verdicts.flatMap(({ server, decision }) =>
    decision.additionalContext !== undefined && decision.additionalContext.trim() !== ""
      ? [{ server, text: decision.additionalContext }]
      : []
  );
  const rewrites = verdicts.filter((v) => v.decision.updatedInput !== undefined);
  const distinct = rewrites.filter((v, i) =>
    rewrites.findIndex((w) => sameJson(w.decision.updatedInput, v.decision.updatedInput)) === i
  );
  const reasons = (list: readonly ToolCallVerdict[], fallback: string) =>
    list.length === 1
      ? list[0]!.decision.reason?.trim() || fallback
      : list.map((v) => `${v.server}: ${v.decision.reason?.trim() || fallback}`).join("; ");
  const denied = verdicts.filter((v) => v.decision.decision === "deny");
  if (denied.length > 0) {
    return { decision: "deny", reason: reasons(denied, "denied"), servers: denied.map((v) => v.server), context };
  }
  if (distinct.length > 1) {
    const names = distinct.map((v) => JSON.stringify(v.server)).join(" and ");
    return {
      decision: "deny",
      reason: `conflicting rewrites of the arguments from ${names}: the call was not run`,
      servers: distinct.map((v) => v.server),
      context,
    };
  }
  const updated = distinct[0]?.decision.updatedInput;
  const withInput = updated === undefined ? {} : { updatedInput: updated };
  const asked = verdicts.filter((v) => v.decision.decision === "ask");
  if (asked.length > 0) {
    return {
      decision: "ask",
      reason: reasons(asked, "asks for permission"),
      servers: asked.map((v) => v.server),
      ...withInput,
      context,
    };
  }
  const allowed = verdicts.filter((v) => v.decision.decision === "allow" || v.decision.updatedInput !== undefined);
  if (allowed.length > 0) return { decision: "allow", servers: allowed.map((v) => v.server), ...withInput, context };
  return { decision: "none", servers: [], context };
}

/** Deep equality of two JSON values (key order ignored). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => sameJson(x, bb[i]));
  }
  const ka = Object.keys(a as object).sort();
  const kb = Object.keys(b as object).sort();
  return ka.length === kb.length &&
    ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * What a hook that said something did, in words for the person, and the text to quote: by the
 * point's effect (`HOOK_POINTS[hook].effect`), and for a typed answer (SPEC 7.7) by its
 * decision. The CLI and ACP both say it so.
 * @example hookAnswerWords("deny", "no writes", undefined) // ["denied the tool call", "no writes"]
 */
export function hookAnswerWords(
  effect: string | undefined,
  text: string | undefined,
  decision: HookDecision | undefined,
): [string, string | undefined] {
  if (decision?.continue === false) return ["halted the prompt", decision.stopReason];
  if (effect === "objection") return ["objected", text];
  if (effect === "deny") {
    if (decision === undefined) return ["denied the tool call", text];
    if (decision.decision === "deny") return ["denied the tool call", decision.reason];
    if (decision.decision === "ask") return ["asked for permission", decision.reason];
    if (decision.updatedInput !== undefined) return ["rewrote the arguments", JSON.stringify(decision.updatedInput)];
    return ["added context", decision.additionalContext];
  }
  if (effect === "append") {
    if (decision?.updatedResult !== undefined) return ["replaced the tool result", undefined];
    return ["added context", decision?.additionalContext ?? text];
  }
  if (effect === "guidance") return ["guided the summary", text];
  return ["added context", text];
}
