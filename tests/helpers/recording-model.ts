/**
 * A model for in-process loop tests: it answers `turns` in order (each a partial response over
 * an `end_turn` with no text and no calls) and records a copy of the history of every request.
 * Past the last turn it rejects, naming how many there were.
 */
import type { HistoryItem, LlmResponse, Model } from "../../lib/conversation/types.ts";

/** A model that answers `turns` in order and records the history of every request in `seen`. */
export function recordingModel(turns: Array<Partial<LlmResponse>>): Model & { seen: HistoryItem[][] } {
  const seen: HistoryItem[][] = [];
  let i = 0;
  return {
    name: "recording",
    seen,
    complete(request) {
      seen.push(structuredClone([...request.history]));
      const turn = turns[i++];
      if (turn === undefined) return Promise.reject(new Error(`out of turns after ${turns.length}`));
      return Promise.resolve({ text: "", toolCalls: [], stop: "end_turn", ...turn });
    },
  };
}
