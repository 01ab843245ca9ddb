/**
 * The operator's permission policy for tool calls (SPEC section 7.8): `allow`, `ask` and `deny`
 * globs over qualified tool names and a default, from flags, the environment or `createAgent`;
 * MCP tool annotations inform the `auto` default. `ask` goes to the person through a
 * {@link PermissionAsk}; with nobody to ask it is a deny that names the setting that allows it.
 * @module
 */

import type { PermissionPolicy } from "../config/config.ts";
import { appliesTo } from "./runner.ts";

export type { PermissionDefault, PermissionPolicy } from "../config/config.ts";

/** The policy that allows every tool: no rules, `auto`. */
export const OPEN_POLICY: PermissionPolicy = Object.freeze({
  allow: [],
  ask: [],
  deny: [],
  default: "auto",
}) as PermissionPolicy;

/** How the person answered (the four option kinds of ACP's `session/request_permission`). */
export type PermissionOutcome = "allow_once" | "allow_always" | "reject_once" | "reject_always";

/** What a {@link PermissionAsk} is asked. */
export interface PermissionRequest {
  /** The call, as a `_PreToolUse` hook sees it (after a rewrite). */
  call: { id: string; name: string; server: string; tool: string; arguments: Record<string, unknown> };
  /** Why it is asked: the hooks' reasons, or the policy rule. */
  reason: string;
  /** The hook servers that asked; empty when the policy asked. */
  servers: readonly string[];
}

/**
 * Asks the person whether a tool call may run (SPEC 7.8). Resolves with the answer; `signal`
 * aborts when the prompt is cancelled (then the answer no longer matters: the call is answered
 * `cancelled`). A rejection counts as `reject_once`. "Always" answers hold for the session.
 * @example
 * const ask: PermissionAsk = async (request) => (request.call.tool === "read" ? "allow_always" : "reject_once");
 */
export type PermissionAsk = (request: PermissionRequest, signal: AbortSignal) => Promise<PermissionOutcome>;

/** The policy's decision for one tool, and the rule that made it, for messages. */
export interface PolicyDecision {
  decision: "allow" | "ask" | "deny";
  /** `deny "fs__*"`, `the default ask`, `destructiveHint`…; absent for the open default. */
  rule?: string;
  /**
   * True when a glob matched by name: an `allow` glob answers a hook's `ask` in advance, and an
   * `ask` glob is answered by the person only (not by a hook's `allow`).
   */
  explicit?: boolean;
}

/**
 * What `policy` decides for the tool `name` (qualified), whose definition is `tool`
 * (annotations read: `readOnlyHint`, `destructiveHint`); `canAsk` says whether someone can
 * answer an `ask` (the `auto` default asks only then).
 * @example
 * policyDecision({ allow: [], ask: ["shell__*"], deny: [], default: "auto" }, "shell__run", undefined, false)
 * // { decision: "ask", rule: 'ask "shell__*"', explicit: true }
 */
export function policyDecision(
  policy: PermissionPolicy,
  name: string,
  tool: { readonly [key: string]: unknown } | undefined,
  canAsk: boolean,
): PolicyDecision {
  const match = (globs: readonly string[]) => globs.find((g) => appliesTo([g], name));
  const denied = match(policy.deny);
  if (denied !== undefined) return { decision: "deny", rule: `deny ${JSON.stringify(denied)}` };
  const asked = match(policy.ask);
  if (asked !== undefined) return { decision: "ask", rule: `ask ${JSON.stringify(asked)}`, explicit: true };
  const allowed = match(policy.allow);
  if (allowed !== undefined) return { decision: "allow", rule: `allow ${JSON.stringify(allowed)}`, explicit: true };
  if (policy.default !== "auto") return { decision: policy.default, rule: `the default ${policy.default}` };
  const annotations = tool?.["annotations"] as { readOnlyHint?: unknown; destructiveHint?: unknown } | undefined;
  if (canAsk && annotations?.readOnlyHint !== true && annotations?.destructiveHint === true) {
    return { decision: "ask", rule: "the server marks it destructiveHint" };
  }
  return { decision: "allow" };
}
