/**
 * The hook points: every lifecycle event the agent calls MCP hook tools at, in one table
 * (SPEC sections 1, 2.3, 7 and 8.4). The hook runner (`hooks.ts`) takes the `_meta` event
 * name and the effect from here; the loop (`loop.ts`) and the compactor (`compactor.ts`)
 * each fire their point at one call site, through `HookRunner.fire`.
 *
 * Adding an event means: its name in {@link HookName} and its row here, one
 * `hooks.fire(name, hookMeta(…), …)` at the place in the loop the row names, and the SPEC
 * text that promises it.
 * @module
 */

/** What a hook point's output does (SPEC section 7). */
export type HookEffect =
  /**
   * Non-blank output is an objection: the turn does not end, the output is injected and the
   * model runs again (the `_Stop` gate, bounded by `SPROUT_AGENT_STOP_MAX_REJECTIONS`).
   */
  | "objection"
  /** Non-blank output is injected into the history as it is; nothing else changes. */
  | "injection";

/**
 * The hooks the agent calls, the keys of {@link HOOK_POINTS} (SPEC section 1); any other
 * `_`-name is reserved and never called.
 * @example
 * const hooks: HookName[] = ["_Stop", "_PostCompact"];
 */
export type HookName = "_Stop" | "_PostCompact";

/** One row of {@link HOOK_POINTS}. */
export interface HookPoint {
  /** The `_meta["sprout-agent/hook"].event` value hook authors see (SPEC section 2.3). */
  readonly event: string;
  /** When it fires, in one sentence. */
  readonly when: string;
  /**
   * Its input: every hook is called with `arguments: {}` and the `_meta` context
   * `{event, round, rejectionsUsed, rejectionsLeft}` ({@link hookMeta}); this says what
   * `round` means for the point.
   */
  readonly input: string;
  /** What non-blank output does. */
  readonly effect: HookEffect;
  /** The step of the loop that fires it (the method that holds the call site). */
  readonly where: string;
}

/**
 * The hook points, by hook tool name. Nothing else in `lib/` names a hook or its event.
 * @example
 * HOOK_POINTS._Stop.event   // "Stop"
 * HOOK_POINTS._PostCompact.effect // "injection"
 */
export const HOOK_POINTS: Readonly<Record<HookName, HookPoint>> = {
  _Stop: {
    event: "Stop",
    when:
      "A response ends the turn (`end_turn`), the previous round was not an objection and the session has objections left.",
    input: "`round`: the round whose response ended the turn.",
    effect: "objection",
    where: "AgentSession#stopGate (lib/loop.ts), after the model call of the round",
  },
  _PostCompact: {
    event: "PostCompact",
    when:
      "A compaction by summary has built the fresh context (never after a truncation, never when the summary is discarded).",
    input: "`round`: the round about to be sent.",
    effect: "injection",
    where: "Compactor#summarise (lib/compactor.ts), in AgentSession#compact at the start of a round",
  },
};

/**
 * Context sent to hook authors as `_meta["sprout-agent/hook"]`, with the point's `event` (SPEC section 2.3).
 * @example
 * // What a hook server reads from `params._meta["sprout-agent/hook"]` (besides `event`):
 * const meta: HookMeta = { round: 3, rejectionsUsed: 1, rejectionsLeft: 2 };
 */
export interface HookMeta {
  /**
   * The round within the prompt, 1-based: for `_Stop`, the round whose response ended the
   * turn; for `_PostCompact`, the round about to be sent.
   */
  round: number;
  /** `_Stop` objections the session has used so far (never reset; SPEC section 7.2). */
  rejectionsUsed: number;
  /** `SPROUT_AGENT_STOP_MAX_REJECTIONS` minus `rejectionsUsed`: objections the session may still make. */
  rejectionsLeft: number;
}

/**
 * The {@link HookMeta} of a call in `round` when the session has used `rejectionsUsed` of
 * its `maxRejections` objections; `rejectionsLeft` is never negative.
 * @example hookMeta(3, 1, 3) // {round: 3, rejectionsUsed: 1, rejectionsLeft: 2}
 */
export function hookMeta(round: number, rejectionsUsed: number, maxRejections: number): HookMeta {
  return { round, rejectionsUsed, rejectionsLeft: Math.max(0, maxRejections - rejectionsUsed) };
}
