/**
 * The tool points (SPEC section 7.6): `_PreToolUse` before a model tool call is sent to its
 * server, `_PostToolUse` after its result arrives, both through the session's
 * {@link HookRunner} (allowlist, timeouts, kills, in-process hooks) and only on the hooks whose
 * declared tools match the call. What they decide is applied here; `runToolCalls`
 * (lib/agent/tool-calls.ts) calls {@link ToolCallHooks} around each call.
 * @module
 */

import { contentText } from "../conversation/results.ts";
import type { ResultBlock, ToolCall } from "../conversation/types.ts";
import type { ToolOutcome, ToolRegistry } from "../mcp/types.ts";
import { TRUNCATED_MARKER } from "../mcp/registry-tools.ts";
import { clampUtf8 } from "../util/utf8.ts";
import { combinePreToolUse, type HookDecision, type ToolCallVerdict } from "./decisions.ts";
import { inputProblems } from "./input-check.ts";
import {
  OPEN_POLICY,
  type PermissionAsk,
  type PermissionOutcome,
  type PermissionPolicy,
  type PermissionRequest,
  policyDecision,
} from "./permission.ts";
import { type HookMeta, type HookToolCall, MAX_HOOK_CONTEXT_TEXT_BYTES } from "./points.ts";
import { type HookResult, type HookRunner, MAX_HOOK_TEXT_BYTES } from "./runner.ts";

/** What `_PreToolUse` leaves of a call: run it (perhaps with new arguments), or its answer instead. */
export type BeforeTool =
  | {
    run: true;
    /** The arguments to run the tool with: the model's, or the one rewrite. */
    arguments: Record<string, unknown>;
    /** Blocks for the model to append to the result: additional context, the rewrite notice. */
    notes: ResultBlock[];
  }
  | { run: false; outcome: ToolOutcome };

/** The tool points around one call, as `runToolCalls` uses them. */
export interface ToolCallHooks {
  /** `_PreToolUse` for `call`, and what its answers decide. Never throws. */
  before(call: ToolCall, signal: AbortSignal): Promise<BeforeTool>;
  /**
   * `_PostToolUse` for `call` (with the arguments it ran with) and its formatted `outcome`;
   * resolves with the outcome as it enters the history, `notes` of `before` appended. Never throws.
   */
  after(call: ToolCall, outcome: ToolOutcome, notes: readonly ResultBlock[]): Promise<ToolOutcome>;
}

/** Options of {@link toolCallHooks}. */
export interface ToolCallHooksOptions {
  /** The session's runner. */
  runner: HookRunner;
  /** For the call's server, bare name and input schema. */
  registry: ToolRegistry;
  /** The `_meta` of the round (`hookMeta(round, …, context)`), read once per call. */
  meta: () => HookMeta;
  /** Answers an `ask` (SPEC 7.8); default: none, so an `ask` denies with a reason naming the setting. */
  ask?: PermissionAsk;
  /** The operator's policy (SPEC 7.8); default {@link OPEN_POLICY}. */
  policy?: PermissionPolicy;
  /** The session's "always" answers by qualified tool name; read and written here. */
  remembered?: Map<string, "allow" | "deny">;
}

/** The JSON block an injection is made of (SPEC section 7.4): `{hook, server, text}`. */
function noteBlock(hook: string, server: string, text: string): ResultBlock {
  return { type: "text", text: JSON.stringify({ hook, server, text }) };
}

/**
 * Each result's answer as a decision: plain non-blank text means `textMeans`; a `block` (the
 * older word of Claude Code's PreToolUse, SPEC 7.7) is a `deny`.
 */
function verdicts(results: readonly HookResult[], textMeans: (text: string) => HookDecision): ToolCallVerdict[] {
  return results
    .filter((r) => r.outcome === "objection" || r.decision !== undefined)
    .map((r) => {
      const decision = r.decision ?? textMeans(r.text ?? "");
      return {
        server: r.server,
        decision: decision.decision === "block" ? { ...decision, decision: "deny" } : decision,
      };
    });
}

/**
 * The person's answer, or `cancelled` as soon as `signal` aborts, whether or not `ask` heeds it
 * (SPEC 7.8: a cancel withdraws the question at once). An `ask` that throws, rejects or
 * answers anything but the four outcomes rejects once: a guard's question fails closed.
 */
function askPerson(
  ask: PermissionAsk,
  request: PermissionRequest,
  signal: AbortSignal,
): Promise<PermissionOutcome | "cancelled"> {
  if (signal.aborted) return Promise.resolve("cancelled");
  return new Promise((resolve) => {
    const onAbort = () => resolve("cancelled");
    signal.addEventListener("abort", onAbort, { once: true });
    const settle = (outcome: PermissionOutcome) => {
      signal.removeEventListener("abort", onAbort);
      resolve(OUTCOMES.includes(outcome) ? outcome : "reject_once");
    };
    try {
      Promise.resolve(ask(request, signal)).then(settle, () => settle("reject_once"));
    } catch {
      settle("reject_once");
    }
  });
}

const OUTCOMES: readonly unknown[] = ["allow_once", "allow_always", "reject_once", "reject_always"];

/**
 * The {@link ToolCallHooks} of a session's prompt. A call the registry cannot route (a name the
 * model invented) is answered by the registry as before and calls no hook.
 * @example
 * const hooks = toolCallHooks({ runner, registry, meta: () => hookMeta(round, 0, 3, context) });
 * const outcomes = await runToolCalls(calls, { ...options, hooks });
 */
export function toolCallHooks(options: ToolCallHooksOptions): ToolCallHooks {
  const { runner, registry } = options;
  const hookCall = (call: ToolCall, args: Record<string, unknown>): HookToolCall | undefined => {
    const route = registry.route(call.name);
    if (route === undefined) return undefined;
    return { id: call.id, name: call.name, server: route.server, tool: route.tool.name, arguments: args };
  };
  /** A denial by hooks: their text, as an injection is (SPEC 7.4). */
  const denied = (servers: readonly string[], text: string): BeforeTool => ({
    run: false,
    outcome: { content: [noteBlock("_PreToolUse", servers.join(", "), text)], isError: true },
  });
  /** A denial by the agent (the policy, the person): plain text, as the agent's own errors are. */
  const refused = (text: string): BeforeTool => ({
    run: false,
    outcome: { content: [{ type: "text", text }], isError: true },
  });
  return {
    async before(call, signal) {
      const route = registry.route(call.name);
      const pass: BeforeTool = { run: true, arguments: call.arguments, notes: [] };
      // A name the registry cannot route is answered by the registry (unknown tool): no hook, no policy.
      if (route === undefined) return pass;
      const toolCall: HookToolCall = {
        id: call.id,
        name: call.name,
        server: route.server,
        tool: route.tool.name,
        arguments: call.arguments,
      };
      const name = JSON.stringify(call.name);
      const remembered = options.remembered?.get(call.name);
      if (remembered === "deny") return refused(`Permission denied: the person rejected ${name} for this session`);
      const policy = policyDecision(options.policy ?? OPEN_POLICY, call.name, route.tool, options.ask !== undefined);
      if (policy.decision === "deny") {
        return refused(`Permission denied: the operator's policy (${policy.rule}) does not allow ${name}`);
      }
      let args = call.arguments;
      let notes: ResultBlock[] = [];
      /** Who asks, if anyone: hooks (their servers and reasons) or the policy (its rule). */
      let asking: { servers: string[]; reason: string } | undefined = policy.decision === "ask"
        ? { servers: [], reason: `the operator's policy (${policy.rule}) asks before ${name} runs` }
        : undefined;
      if (runner.targets("_PreToolUse", call.name).length > 0) {
        const results = await runner.run("_PreToolUse", { ...options.meta(), toolCall }, { toolName: call.name });
        // A required guard that did not answer denies (SPEC 3.1): it must not pass silently.
        // An answer that does not count (whitespace, only non-text content, a typed answer whose
        // every field was ignored) is no answer from a required guard either.
        const unread = (r: HookResult) =>
          r.outcome === "none" && r.message !== undefined &&
          (r.decision === undefined || Object.keys(r.decision).length === 0);
        const failed = results.filter((r) =>
          (r.outcome === "timeout" || r.outcome === "error" || unread(r)) && registry.isRequired(r.server)
        );
        if (failed.length > 0) {
          const why = failed.map((r) => r.message ?? r.outcome).join("; ");
          return denied(
            failed.map((r) => r.server),
            `the required guard did not answer, so the call was not run (${why})`,
          );
        }
        const list = verdicts(results, (text) => ({ decision: "deny", reason: text }));
        const halted = list.find((v) => v.decision.continue === false);
        if (halted !== undefined) {
          return denied([halted.server], halted.decision.stopReason?.trim() || "the prompt was halted by a hook");
        }
        const combined = combinePreToolUse(list);
        notes = combined.context.map((c) => noteBlock("_PreToolUse", c.server, c.text));
        if (combined.decision === "deny") return denied(combined.servers, combined.reason ?? "denied");
        if (combined.updatedInput !== undefined) {
          const problems = inputProblems(combined.updatedInput, route.tool.inputSchema);
          const by = combined.servers.filter((s) => list.some((v) => v.server === s && v.decision.updatedInput));
          if (problems.length > 0) {
            return denied(by, `the rewritten arguments do not fit the tool's input schema: ${problems.join("; ")}`);
          }
          args = combined.updatedInput;
          // Cut as hook text is (SPEC 4.3): the note is appended past the result's own cap.
          const rewritten = clampUtf8(JSON.stringify(args), MAX_HOOK_TEXT_BYTES, TRUNCATED_MARKER);
          notes.unshift(noteBlock("_PreToolUse", by.join(", "), `the arguments were rewritten to ${rewritten}`));
        }
        // A hook's allow answers the default's ask, never an ask rule the operator wrote (the
        // person answers that); an allow rule the operator wrote answers a hook's ask.
        if (combined.decision === "allow" && !(policy.decision === "ask" && policy.explicit)) asking = undefined;
        if (combined.decision === "ask" && !(policy.decision === "allow" && policy.explicit)) {
          asking = { servers: combined.servers, reason: combined.reason ?? "asks for permission" };
        }
      }
      if (asking !== undefined && remembered !== "allow") {
        const { servers, reason } = asking;
        const say = (text: string) =>
          servers.length > 0 ? denied(servers, text) : refused(`Permission denied: ${text}`);
        if (options.ask === undefined) {
          return say(
            `${reason} (permission was asked for, and no one can answer in this run: allow it in advance with --allow ${name} or SPROUT_AGENT_ALLOW)`,
          );
        }
        const outcome = await askPerson(
          options.ask,
          { call: { ...toolCall, arguments: args }, reason, servers },
          signal,
        );
        // A cancel withdrew the question: the caller answers the call `cancelled`.
        if (outcome === "cancelled") return refused("cancelled");
        if (outcome === "allow_always") options.remembered?.set(call.name, "allow");
        if (outcome === "reject_always") options.remembered?.set(call.name, "deny");
        if (outcome !== "allow_once" && outcome !== "allow_always") return say(`${reason} (the person denied it)`);
      }
      return { run: true, arguments: args, notes };
    },

    async after(call, outcome, notes) {
      const toolCall = hookCall(call, call.arguments);
      const finish = (o: ToolOutcome, extra: readonly ResultBlock[] = []): ToolOutcome =>
        notes.length === 0 && extra.length === 0 ? o : { ...o, content: [...o.content, ...extra, ...notes] };
      if (toolCall === undefined || runner.targets("_PostToolUse", call.name).length === 0) return finish(outcome);
      const text = clampUtf8(contentText(outcome.content), MAX_HOOK_CONTEXT_TEXT_BYTES, TRUNCATED_MARKER);
      const results = await runner.run("_PostToolUse", {
        ...options.meta(),
        toolCall,
        toolResult: { text, isError: outcome.isError },
      }, { toolName: call.name });
      const list = verdicts(results, (t) => ({ additionalContext: t }));
      const context = list.flatMap((v) =>
        (v.decision.additionalContext ?? "").trim() === ""
          ? []
          : [noteBlock("_PostToolUse", v.server, v.decision.additionalContext!)]
      );
      const rewrites = list.filter((v) => v.decision.updatedResult !== undefined);
      const distinct = [...new Set(rewrites.map((v) => v.decision.updatedResult!))];
      if (distinct.length > 1) {
        const names = rewrites.map((v) => JSON.stringify(v.server)).join(" and ");
        const withheld = `[result withheld: conflicting rewrites of the result from ${names}]`;
        return finish({ content: [{ type: "text", text: withheld }], isError: true }, context);
      }
      if (distinct.length === 1) {
        const others = outcome.content.filter((b) => b.type !== "text");
        return finish({ ...outcome, content: [{ type: "text", text: distinct[0]! }, ...others] }, context);
      }
      return finish(outcome, context);
    },
  };
}
