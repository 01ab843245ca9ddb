/**
 * A child's report to its parent (SPEC section 13.5, CASES C40): whatever the hooks did, the
 * parent receives every answer the child gave, so a short closing message after a
 * `_SubagentStop` objection ("OK.") never replaces the report written before it.
 * @module
 */

import type { HistoryItem } from "../conversation/types.ts";

/**
 * The report in a child's `history`: the text of each of its responses that ended a turn (an
 * assistant item without tool calls: its first answer, and each answer after an objection), in
 * order, each trimmed, blank ones and exact repeats left out, joined by a blank line. When the
 * child never ended a turn (a limit, a cancel, a failure stopped it first), the text of its last
 * assistant item that has text; `""` when it wrote none. Text written beside tool calls ("Let me
 * look at the tests") is work in progress, not the report.
 * @example
 * subagentReport([
 *   { role: "user", text: "review" },
 *   { role: "assistant", text: "3 problems: …", toolCalls: [] },
 *   // _SubagentStop objected here (an injected pair)
 *   { role: "assistant", text: "OK.", toolCalls: [] },
 * ]) // "3 problems: …\n\nOK."
 */
export function subagentReport(history: readonly HistoryItem[]): string {
  const answers: string[] = [];
  let last = "";
  for (const item of history) {
    if (item.role !== "assistant") continue;
    const text = item.text.trim();
    if (text === "") continue;
    last = text;
    if (item.toolCalls.length === 0 && !answers.includes(text)) answers.push(text);
  }
  return answers.length > 0 ? answers.join("\n\n") : last;
}
