/**
 * `elicitation/create` (SPEC section 10, docs/ACP.md): an MCP server's elicitation passed on
 * to the ACP client when it declares `clientCapabilities.elicitation` (`form`, `url`), tied to
 * the session and, when known, the tool call; and how the client's answer becomes an MCP
 * `ElicitationResult`. The transport (request ids, the withdrawal on cancel) is in server.ts.
 * @module
 */

import type { ElicitationRequest, ElicitationResult } from "../mcp/input-requests.ts";
import { asObject } from "../util/json.ts";

/** The elicitation modes `clientCapabilities` declares (`elicitation.form`, `elicitation.url`), in that order. */
export function clientElicitationModes(clientCapabilities: unknown): ("form" | "url")[] {
  const caps = asObject(clientCapabilities);
  const elicitation = asObject(caps?.elicitation);
  if (elicitation === undefined) return [];
  const modes: ("form" | "url")[] = [];
  if (asObject(elicitation.form) !== undefined) modes.push("form");
  if (asObject(elicitation.url) !== undefined) modes.push("url");
  return modes;
}

/**
 * The params of `elicitation/create` for `request`: the session, the tool call when known,
 * the mode, the server's message prefixed with its name, and the schema or the URL.
 * @example elicitationParams("ses_1", "call_1", "gh", { mode: "url", message: "Sign in", url: "https://x", elicitationId: "e1" })
 */
export function elicitationParams(
  sessionId: string,
  toolCallId: string | undefined,
  server: string,
  request: ElicitationRequest,
): Record<string, unknown> {
  const scope = toolCallId === undefined ? { sessionId } : { sessionId, toolCallId };
  const message = `${server}: ${request.message}`;
  return request.mode === "url"
    ? { ...scope, mode: "url", message, url: request.url, elicitationId: request.elicitationId }
    : { ...scope, mode: "form", message, requestedSchema: request.requestedSchema };
}

/**
 * The client's answer as an MCP result: `accept` (with its `content` object, if any),
 * `decline` or `cancel`; an error response or another shape is a `problem` (answered `cancel`,
 * with a log line that never holds the content).
 */
export function elicitationAnswer(
  message: { result?: unknown; error?: unknown },
): { result: ElicitationResult } | { problem: string } {
  if (message.error !== undefined) {
    const e = message.error as { code?: unknown; message?: unknown } | null;
    const code = typeof e?.code === "number" ? ` ${e.code}` : "";
    const text = typeof e?.message === "string" ? `: ${e.message}` : "";
    return { problem: `the client answered with an error${code}${text}` };
  }
  const result = asObject(message.result);
  const action = result?.action;
  if (action === "decline" || action === "cancel") return { result: { action } };
  if (action !== "accept") {
    return {
      problem: `the result's action ${JSON.stringify(action ?? null).slice(0, 60)} is not accept, decline or cancel`,
    };
  }
  const content = result?.content;
  if (content === undefined || content === null) return { result: { action: "accept" } };
  const object = asObject(content);
  if (object === undefined) return { problem: "the accepted content is not an object" };
  return { result: { action: "accept", content: object as Record<string, string | number | boolean | string[]> } };
}
