/**
 * The hook points: every lifecycle event the agent calls MCP hook tools at, in one table
 * (SPEC sections 1, 2.3, 7, 7.5 and 8.4). The hook runner (`runner.ts`) takes the `_meta` event
 * name and the effect from here; the loop (`../agent/loop.ts`), the compactor (`../context/compactor.ts`) and the
 * agent (`../agent/agent.ts`) each fire their point at one call site, through `HookRunner.fire`.
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
  | "injection"
  /**
   * `_PreCompact`: non-blank output is guidance the summariser receives in the summary
   * request (JSON-encoded, SPEC 8.2); nothing is injected into the conversation.
   */
  | "guidance"
  /** Non-blank output is only reported (a `hook` event with its text); nothing reaches the model. */
  | "log"
  /**
   * `_PreToolUse`: non-blank output denies the tool call (the output, as JSON, is the call's
   * error result); a typed answer may also allow, ask or rewrite the arguments (SPEC 7.6).
   */
  | "deny"
  /**
   * `_PostToolUse`: non-blank output is appended, as JSON, to the tool's result for the
   * model; a typed answer may also replace the result's text (SPEC 7.6).
   */
  | "append";

/**
 * The hooks the agent calls, the keys of {@link HOOK_POINTS} (SPEC section 1); any other
 * `_`-name is reserved and never called.
 * @example
 * const hooks: HookName[] = ["_Stop", "_PostCompact"];
 */
export type HookName =
  | "_Stop"
  | "_PreCompact"
  | "_PostCompact"
  | "_SessionStart"
  | "_UserPromptSubmit"
  | "_SessionEnd"
  | "_PreToolUse"
  | "_PostToolUse"
  | "_SubagentStart"
  | "_SubagentStop";

/** One row of {@link HOOK_POINTS}. */
export interface HookPoint {
  /** The `_meta["sprout-agent/hook"].event` value hook authors see (SPEC section 2.3). */
  readonly event: string;
  /** When it fires, in one sentence. */
  readonly when: string;
  /**
   * Its input: every hook is called with `arguments: {}` and the `_meta` context
   * ({@link HookMeta} and `event`, built by {@link hookMeta}); this says what `round` and
   * `prompt` mean for the point.
   */
  readonly input: string;
  /** What non-blank output does. */
  readonly effect: HookEffect;
  /** The step of the loop that fires it (the method that holds the call site). */
  readonly where: string;
  /**
   * The agent event that already shows this point's output to people, if any: `"compaction"`
   * (the `compaction` event names the servers that injected). The CLI prints no line of its
   * own for such a point's `hook` events.
   */
  readonly reportedBy?: "compaction";
  /**
   * Whose point it is: `"subagent"` for the points that fire only for a subagent's session
   * (`_SubagentStart`, `_SubagentStop`: their `_meta` has `subagent`, and an objection spends
   * the child's own budget, SPEC 13.4); absent: the session's own agent's (or any agent's).
   */
  readonly agent?: "subagent";
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
    where: "AgentSession#stopGate (lib/agent/loop.ts), after the model call of the round",
  },
  _PreCompact: {
    event: "PreCompact",
    when:
      "A compaction by summary is about to ask for the summary (never before a truncation, never when no summary could help).",
    input: "`round`: the round about to be sent.",
    effect: "guidance",
    where: "Compactor#summarise (lib/context/compactor.ts), before the summary request, in AgentSession#compact",
  },
  _PostCompact: {
    event: "PostCompact",
    when:
      "A compaction by summary has built the fresh context (never after a truncation, never when the summary is discarded).",
    input: "`round`: the round about to be sent.",
    effect: "injection",
    where: "Compactor#summarise (lib/context/compactor.ts), in AgentSession#compact at the start of a round",
    reportedBy: "compaction",
  },
  _SessionStart: {
    event: "SessionStart",
    when: "The session's servers are connected, before its first prompt (once per session).",
    input: "`round`: 0; `prompt`: 0 (no prompt yet).",
    effect: "injection",
    where:
      "AgentSession#start (lib/agent/loop.ts), called by createAgent (lib/agent/agent.ts); the items wait for the first prompt",
  },
  _UserPromptSubmit: {
    event: "UserPromptSubmit",
    when: "A prompt was submitted: before its first round is sent (every prompt).",
    input: "`round`: 1, the round about to be sent; `prompt`: this prompt's number.",
    effect: "injection",
    where: "AgentSession#run (lib/agent/loop.ts), after the user item is added",
  },
  _SessionEnd: {
    event: "SessionEnd",
    when:
      "The session closes (`Agent.close`: the CLI's exit, an ACP `session/close` or shutdown), before its servers are closed.",
    input: "`round`: 0; `prompt`: the number of prompts the session ran.",
    effect: "log",
    where: "AgentSession#end (lib/agent/loop.ts), called by Agent.close (lib/agent/agent.ts)",
  },
  _PreToolUse: {
    event: "PreToolUse",
    when:
      "The model asked for a tool call and its arguments were parsed: before the call is sent to its server (each call of the response; only hooks whose declared tools match its name).",
    input:
      "`round`: the round whose response made the call; `toolCall`: the call (id, qualified name, server, bare name, arguments).",
    effect: "deny",
    where: "toolCallHooks (lib/hooks/tool-hooks.ts), from runToolCalls (lib/agent/tool-calls.ts), per call",
  },
  _PostToolUse: {
    event: "PostToolUse",
    when:
      "A tool call's result arrived (an error result included, not a cancel or a denied call): before it enters the history.",
    input:
      "`round`: as for _PreToolUse; `toolCall`: the call as it ran; `toolResult`: its text (4 KiB at most) and isError.",
    effect: "append",
    where: "toolCallHooks (lib/hooks/tool-hooks.ts), from runToolCalls (lib/agent/tool-calls.ts), per call",
  },
  _SubagentStart: {
    event: "SubagentStart",
    when:
      "A subagent's task begins: after its user item (the task), before its first model request (each task; never in the parent's turn).",
    input:
      '`round`: 1; `subagent`: its name and task; `_meta["sprout-agent/agent"]` names the child (SPEC section 13.4).',
    effect: "injection",
    agent: "subagent",
    where: "AgentSession#run (lib/agent/loop.ts) of the child session, in place of _UserPromptSubmit",
  },
  _SubagentStop: {
    event: "SubagentStop",
    when:
      "A subagent's response ends its turn, the round before was no objection and the child has objections left (its own budget; the parent's _Stop never runs for it).",
    input:
      "`round`: the child's round that ended the turn; `rejectionsUsed`/`rejectionsLeft`: the child's own budget; `subagent`: its name and task.",
    effect: "objection",
    agent: "subagent",
    where: "AgentSession#stopGate (lib/agent/loop.ts) of the child session, in place of _Stop",
  },
};

/**
 * The tools a hook tool applies to, from its definition's `_meta["sprout-agent/hook"].tools`
 * (an array of globs over qualified tool names, SPEC section 7.6), or `undefined` when it
 * declares none (every tool). Entries that are not strings are ignored; an array with no
 * string matches no tool.
 * @example toolPatternsOf({ name: "_PreToolUse", _meta: { "sprout-agent/hook": { tools: ["fs__write_*"] } } }) // ["fs__write_*"]
 */
export function toolPatternsOf(tool: { readonly [key: string]: unknown } | undefined): string[] | undefined {
  const meta = tool?._meta;
  if (typeof meta !== "object" || meta === null) return undefined;
  const hook = (meta as Record<string, unknown>)["sprout-agent/hook"];
  if (typeof hook !== "object" || hook === null) return undefined;
  const tools = (hook as Record<string, unknown>).tools;
  if (!Array.isArray(tools)) return undefined;
  return tools.filter((t): t is string => typeof t === "string");
}

/** The tool call a tool point's hook receives as `_meta["sprout-agent/hook"].toolCall` (SPEC 7.6). */
export interface HookToolCall {
  /** The call id, as it is in the history. */
  id: string;
  /** The qualified name the model used (`fs__write_file`). */
  name: string;
  /** The server the call goes to, by its configured name. */
  server: string;
  /** The tool's bare name on that server (`write_file`). */
  tool: string;
  /** The arguments (after a `_PreToolUse` rewrite, for `_PostToolUse`). */
  arguments: Record<string, unknown>;
}

/** Largest `lastAssistantText` sent in a hook's `_meta`, in UTF-8 bytes (SPEC section 2.3). */
export const MAX_HOOK_CONTEXT_TEXT_BYTES = 4096;

/**
 * Context sent to hook authors as `_meta["sprout-agent/hook"]`, with the point's `event` (SPEC
 * section 2.3). The agent always sends every field; the last four are optional here only so that
 * a caller of `HookRunner` may leave them out.
 * @example
 * // What a hook server reads from `params._meta["sprout-agent/hook"]` (besides `event`):
 * const meta: HookMeta = {
 *   round: 3, rejectionsUsed: 1, rejectionsLeft: 2,
 *   cwd: "/home/me/project", lastAssistantText: "All done.", afterObjection: false, prompt: 1,
 * };
 */
export interface HookMeta {
  /**
   * The round within the prompt, 1-based: for `_Stop`, the round whose response ended the
   * turn; for `_PreCompact`, `_PostCompact` and `_UserPromptSubmit`, the round about to be sent; 0 for
   * `_SessionStart` and `_SessionEnd`.
   */
  round: number;
  /** `_Stop` objections the session has used so far (never reset; SPEC section 7.2). */
  rejectionsUsed: number;
  /** `SPROUT_AGENT_STOP_MAX_REJECTIONS` minus `rejectionsUsed`: objections the session may still make. */
  rejectionsLeft: number;
  /** The agent's working directory (`createAgent`'s `cwd`, else the process's), absolute. */
  cwd?: string;
  /**
   * The text of the session's last assistant message that had text, cut to
   * {@link MAX_HOOK_CONTEXT_TEXT_BYTES} (4 KiB) of UTF-8 with a `[truncated]` marker; `""` when
   * there is none. For `_Stop`, the response that ended the turn.
   */
  lastAssistantText?: string;
  /**
   * True when the prompt's last end of turn was objected to by `_Stop` and no tool was called
   * since: for `_Stop`, this stop comes right after an objection (only possible with
   * `SPROUT_AGENT_STOP_DECLINED_TWICE=off`, SPEC section 7.1). False outside a prompt.
   */
  afterObjection?: boolean;
  /**
   * The prompt's 1-based number in the session; for `_SessionStart` and `_SessionEnd` the
   * number of prompts the session has run (0 for a new session's `_SessionStart`).
   */
  prompt?: number;
  /**
   * `_SessionStart` only: `"startup"` for a new session, `"resume"` for one brought back from
   * its transcript (`run --continue`, ACP `session/load`; Claude Code's `source`). The session
   * id is then the one the session had (SPEC section 12.5).
   */
  source?: "startup" | "resume";
  /** The tool points only: the call (SPEC section 7.6). */
  toolCall?: HookToolCall;
  /**
   * `_SubagentStart` and `_SubagentStop` only: the subagent's name and its task (cut to
   * {@link MAX_HOOK_CONTEXT_TEXT_BYTES} with a `[truncated]` marker; SPEC section 13.4).
   */
  subagent?: { name: string; task: string };
  /**
   * `_PostToolUse` only: the result's text (text blocks joined with `\n`, cut to
   * {@link MAX_HOOK_CONTEXT_TEXT_BYTES} with a `[truncated]` marker) and whether it is an error.
   */
  toolResult?: { text: string; isError: boolean };
}

/**
 * Which agent a hook call is about, sent as `_meta["sprout-agent/agent"]` on every hook call
 * a subagent's session makes (SPEC section 13.4); absent on the calls of the session's own
 * agent, so one hook server can tell them apart.
 * @example
 * const agent: HookAgent = { session: "6f1c…", id: "sub00001", name: "reviewer", depth: 1, toolCallId: "toolu_01" };
 */
export interface HookAgent {
  /** The parent session's id (the `_meta["sprout-agent/session"]` every server sees). */
  session: string;
  /** The child's id, unique in the session (the parent's tool call id's child). */
  id: string;
  /** The subagent's name. */
  name: string;
  /** 1 for a child of the session's agent, 2 for its child, … */
  depth: number;
  /** The parent's tool call that runs the child. */
  toolCallId: string;
}

/** The fields of {@link HookMeta} that describe the session rather than the `_Stop` budget. */
export type HookContext = Required<Pick<HookMeta, "cwd" | "lastAssistantText" | "afterObjection" | "prompt">>;

/**
 * The {@link HookMeta} of a call in `round` when the session has used `rejectionsUsed` of
 * its `maxRejections` objections; `rejectionsLeft` is never negative. `context`, when given,
 * adds the session's fields (the loop always gives it).
 * @example hookMeta(3, 1, 3) // {round: 3, rejectionsUsed: 1, rejectionsLeft: 2}
 */
export function hookMeta(
  round: number,
  rejectionsUsed: number,
  maxRejections: number,
  context?: HookContext,
): HookMeta {
  return { round, rejectionsUsed, rejectionsLeft: Math.max(0, maxRejections - rejectionsUsed), ...context };
}
