/**
 * The agent's answers to MCP servers' input requests (SPEC section 10): the person's
 * elicitation through the host's handler (declined with a warning when there is none), sampling
 * with the agent's own model under the operator's setting, and the session's folder as the
 * one root. `createAgent` hands the result to the registry.
 * @module
 */

import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import type { HistoryItem, Model } from "../conversation/types.ts";
import type { InputContext, InputHandler, SamplingResult } from "../mcp/input-requests.ts";

/** What {@link agentInput} builds from. */
export interface AgentInputOptions {
  /** The host's handler (`AgentOptions.input`), whose parts win. */
  input: InputHandler | undefined;
  /** `AgentOptions.sampling`: on with a token cap, or off. */
  sampling: { maxTokens: number } | false | undefined;
  /** The agent's model, for sampling. */
  model: Model;
  /** The session's folder: the root. */
  cwd: string;
  /** A declined elicitation's reason, and other notes. */
  warn: (message: string) => void;
}

/** The session's {@link InputHandler}: the host's parts, else the defaults of `AgentOptions.input`. */
export function agentInput(options: AgentInputOptions): InputHandler {
  const { input, warn } = options;
  const handler: InputHandler = {
    elicit: input?.elicit ?? ((request, context) => {
      warn(
        `Declined the ${request.mode === "url" ? "URL " : ""}elicitation of ${
          origin(context)
        }: no one can answer it in this session (${JSON.stringify(clip(request.message))})`,
      );
      return Promise.resolve({ action: "decline" });
    }),
    roots: input?.roots ?? [{ uri: pathToFileURL(options.cwd).href, name: basename(options.cwd) || options.cwd }],
  };
  if (input?.elicitationModes !== undefined) handler.elicitationModes = input.elicitationModes;
  if (input?.maxRounds !== undefined) handler.maxRounds = input.maxRounds;
  const sample = input?.sample ??
    (options.sampling ? modelSampler(options.model, options.sampling.maxTokens) : undefined);
  if (sample !== undefined) handler.sample = sample;
  return handler;
}

/**
 * Answers `sampling/createMessage` with `model`: the request's text messages as history, its
 * `systemPrompt`, no tools, at most `maxTokens` output tokens (or the request's `maxTokens`
 * when smaller).
 * @throws {Error} for content other than text (images and audio are not sampled), an empty
 *   request; whatever the model throws
 */
export function modelSampler(
  model: Model,
  maxTokens: number,
): (params: Record<string, unknown>, context: InputContext) => Promise<SamplingResult> {
  return async (params, context) => {
    const history: HistoryItem[] = [];
    for (const [i, m] of (params.messages as unknown[]).entries()) {
      const message = m as { role?: unknown; content?: unknown } | null;
      const blocks = Array.isArray(message?.content) ? message.content : [message?.content];
      const texts = blocks.map((b) => {
        const block = b as { type?: unknown; text?: unknown } | null;
        if (block?.type !== "text" || typeof block.text !== "string") {
          throw new Error(
            `messages[${i}] holds ${JSON.stringify(block?.type ?? null)} content; only text can be sampled`,
          );
        }
        return block.text;
      });
      const text = texts.join("\n");
      const role = message?.role === "assistant" ? "assistant" : "user";
      const last = history.at(-1);
      if (last !== undefined && last.role === role) last.text += `\n\n${text}`;
      else history.push(role === "user" ? { role, text } : { role, text, toolCalls: [] });
    }
    if (history.length === 0) throw new Error("the request has no messages");
    const asked = typeof params.maxTokens === "number" && params.maxTokens >= 1
      ? Math.floor(params.maxTokens)
      : maxTokens;
    const response = await model.complete({
      system: typeof params.systemPrompt === "string" ? params.systemPrompt : "",
      history,
      tools: [],
      maxOutputTokens: Math.min(asked, maxTokens),
      signal: context.signal,
    });
    const stopReason = response.stop === "end_turn"
      ? "endTurn"
      : response.stop === "max_tokens"
      ? "maxTokens"
      : response.stop;
    return { role: "assistant", content: { type: "text", text: response.text }, model: model.name, stopReason };
  };
}

function origin(context: InputContext): string {
  return `server "${context.server}"${context.tool === undefined ? "" : ` (tool "${context.tool}")`}`;
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}
