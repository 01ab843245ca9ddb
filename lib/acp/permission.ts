/**
 * `session/request_permission` (SPEC section 7.8, issue 22): what the agent asks the client
 * when the permission policy or a `_PreToolUse` hook says `ask`, and how the client's answer
 * becomes a {@link PermissionOutcome}. The transport (request ids, the pending map, the
 * withdrawal on cancel) is in server.ts.
 * @module
 */

import type { PermissionOutcome, PermissionRequest } from "../hooks/permission.ts";

/** The four ACP option kinds, offered in this order; each option's id is its kind. */
export const PERMISSION_OPTIONS: readonly { optionId: PermissionOutcome; name: string; kind: PermissionOutcome }[] = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow in this session", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject in this session", kind: "reject_always" },
];

/**
 * The params of `session/request_permission` for `request`: the tool call (`pending`, its
 * qualified name as title, the arguments it would run with, the reason as its content) and
 * the four options.
 * @example permissionParams("ses_1", { call: { id: "call_1", name: "fs__rm", server: "fs", tool: "rm", arguments: {} }, reason: "r", servers: [] })
 */
export function permissionParams(sessionId: string, request: PermissionRequest): Record<string, unknown> {
  const who = request.servers.length === 0
    ? ""
    : ` (${request.servers.length === 1 ? "hook server" : "hook servers"} ${
      request.servers.map((s) => JSON.stringify(s)).join(", ")
    })`;
  return {
    sessionId,
    toolCall: {
      toolCallId: request.call.id,
      title: request.call.name,
      kind: "other",
      status: "pending",
      rawInput: request.call.arguments,
      content: [{ type: "content", content: { type: "text", text: `Permission asked: ${request.reason}${who}` } }],
    },
    options: PERMISSION_OPTIONS,
  };
}

/**
 * The client's answer as an outcome. A `cancelled` outcome is `cancelled` (the prompt is
 * being cancelled, or the client withdrew the question); an error response or a result that
 * is not one of ACP's shapes, or that selects an option we did not offer, is a `problem` (the
 * call is then rejected, with a log line).
 * @example permissionAnswer({ result: { outcome: { outcome: "selected", optionId: "allow_once" } } }) // { outcome: "allow_once" }
 */
export function permissionAnswer(
  message: { result?: unknown; error?: unknown },
): { outcome: PermissionOutcome | "cancelled" } | { problem: string } {
  if (message.error !== undefined) {
    const e = message.error as { code?: unknown; message?: unknown } | null;
    const code = typeof e?.code === "number" ? ` ${e.code}` : "";
    const text = typeof e?.message === "string" ? `: ${e.message}` : "";
    return { problem: `the client answered with an error${code}${text}` };
  }
  const outcome = (message.result as { outcome?: unknown } | null | undefined)?.outcome as
    | { outcome?: unknown; optionId?: unknown }
    | null
    | undefined;
  if (typeof outcome !== "object" || outcome === null) {
    return { problem: `the result has no outcome object: ${clip(JSON.stringify(message.result ?? null))}` };
  }
  if (outcome.outcome === "cancelled") return { outcome: "cancelled" };
  if (outcome.outcome !== "selected") {
    return { problem: `outcome.outcome ${clip(JSON.stringify(outcome.outcome ?? null))} is not selected or cancelled` };
  }
  const chosen = PERMISSION_OPTIONS.find((o) => o.optionId === outcome.optionId);
  if (chosen === undefined) {
    return { problem: `optionId ${clip(JSON.stringify(outcome.optionId ?? null))} is not one of the options offered` };
  }
  return { outcome: chosen.kind };
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}
