/**
 * A model for the subagent tests (SPEC 13): it answers by the request's system prompt, so the
 * parent and each child follow their own script whatever order their requests come in, and
 * it streams each text through `onTextDelta` as a wire client does.
 * - the parent (`PARENT`): first hands `review a.ts` to `reviewer` and `run the tests` to
 *   `tester` in one response, then answers `Summary: ` and the results it got;
 * - `reviewer` (`You review code.`): reads `a.ts` through `fx__read`, then reports
 *   {@link REVIEW_REPORT}, and answers `OK.` after an objection;
 * - `tester` (`You test code.`): reports {@link TEST_REPORT}, then `Still all pass.`.
 * The children's first requests wait for each other (up to 10 s): a test of concurrency fails
 * rather than hangs when they run one after the other.
 */
import type { HistoryItem, LlmRequest, LlmResponse, Model } from "../../lib/conversation/types.ts";

export const REVIEW_REPORT = "REVIEW of a.ts: 2 problems.\n1. line 3 divides by zero\n2. line 9 never returns";
export const TEST_REPORT = "TESTS: all 12 pass.";
export const REVIEWER = { name: "reviewer", description: "Reviews code", instructions: "You review code." };
export const TESTER = { name: "tester", description: "Runs the tests", instructions: "You test code." };

/** The model; `requests` keeps a copy of each request's system prompt, history and tool names. */
export function delegatingModel(options: { barrier?: boolean; waitForAbort?: string[] } = {}): Model & {
  requests: Array<{ system: string; history: HistoryItem[]; tools: string[] }>;
  aborted: string[];
} {
  const requests: Array<{ system: string; history: HistoryItem[]; tools: string[] }> = [];
  const aborted: string[] = [];
  const arrived = new Set<string>();
  let release: () => void = () => {};
  const both = new Promise<void>((resolve) => (release = resolve));
  const reply = (request: LlmRequest, response: Partial<LlmResponse>): LlmResponse => {
    if (response.text) request.onTextDelta?.(response.text);
    return { text: "", toolCalls: [], stop: "end_turn", usage: { inputTokens: 10, outputTokens: 5 }, ...response };
  };
  return {
    name: "delegating",
    requests,
    aborted,
    async complete(request) {
      requests.push({
        system: request.system,
        history: structuredClone([...request.history]),
        tools: request.tools.map((t) => t.name),
      });
      const who = request.system === "You review code."
        ? "reviewer"
        : request.system === "You test code."
        ? "tester"
        : "parent";
      // The model's own turns: injected hook calls (`server___Hook`) are not its.
      const own = request.history.filter((i) =>
        i.role === "assistant" && !i.toolCalls.some((c) => c.name.includes("___"))
      );
      const answers = own.filter((i) => i.role === "assistant" && i.text !== "").length;
      const turns = own.length;
      if (who !== "parent" && options.waitForAbort?.includes(who)) {
        await new Promise<void>((resolve) => {
          if (request.signal?.aborted) resolve();
          request.signal?.addEventListener("abort", () => resolve(), { once: true });
        });
        aborted.push(who);
        throw new DOMException("aborted", "AbortError");
      }
      if (who !== "parent" && options.barrier !== false && turns === 0) {
        arrived.add(who);
        if (arrived.size === 2) release();
        const timeout = new Promise<"late">((resolve) => setTimeout(() => resolve("late"), 10_000));
        if (await Promise.race([both, timeout]) === "late") throw new Error(`${who} waited 10 s for its sibling`);
      }
      if (who === "parent") {
        if (turns === 0) {
          return reply(request, {
            stop: "tool_use",
            toolCalls: [
              { id: "toolu_r", name: "subagent_reviewer", arguments: { task: "review a.ts" } },
              { id: "toolu_t", name: "subagent_tester", arguments: { task: "run the tests" } },
            ],
          });
        }
        const results = request.history.filter((i) => i.role === "tool").map((i) =>
          i.role === "tool" ? i.content.map((b) => (b.type === "text" ? b.text : "")).join("") : ""
        );
        return reply(request, { text: `Summary: ${results.join(" | ")}` });
      }
      if (who === "reviewer") {
        if (turns === 0) {
          return reply(request, {
            stop: "tool_use",
            toolCalls: [{ id: "toolu_read", name: "fx__read", arguments: { path: "a.ts" } }],
          });
        }
        return reply(request, { text: answers <= 0 ? REVIEW_REPORT : "OK." });
      }
      return reply(request, { text: answers === 0 ? TEST_REPORT : "Still all pass." });
    },
  };
}
