/**
 * What the hook servers said about one host event, combined as the agent combines it (SPEC
 * sections 4.3, 7.4, 7.6 and 7.7), and that answer in each host's own words: the JSON a
 * command hook prints on stdout, exit status 0 (docs/BRIDGE.md has the table and the sources).
 * @module
 */

import { combinePreToolUse, type HookDecision, type ToolCallVerdict } from "../hooks/decisions.ts";
import { HOOK_POINTS, type HookName } from "../hooks/points.ts";
import type { HookResult } from "../hooks/runner.ts";
import { HOST_TITLES, type HostName } from "./hosts.ts";

/** The servers' combined answer to one event, in no host's words yet. */
export interface BridgeAnswer {
  /** `_Stop`: the objections (each `{hook, server, text}` JSON, one a line): block the stop with this reason. */
  block?: string;
  /** The tool points' decision; `updatedInput` the one rewrite of the arguments. */
  permission?: { decision: "allow" | "deny" | "ask"; reason?: string; updatedInput?: Record<string, unknown> };
  /** Text for the model (each `{hook, server, text}` JSON, one a line): the host's `additionalContext`. */
  context?: string;
  /** `_PostToolUse`: the text that replaces the tool's result. */
  replaceResult?: string;
  /** A `continue: false` answer's reason: halt the host's turn. */
  halt?: string;
  /** For the person (warnings, `systemMessage`s, output no host reads): `systemMessage` and stderr. */
  notes: string[];
}

/** The JSON text the model reads for one hook's output, as the agent injects it (SPEC 7.4). */
export function noteText(hook: string, server: string, text: string): string {
  return JSON.stringify({ hook, server, text });
}

/** Each result's answer as a decision: plain text means `textMeans`; `block` at a tool point is `deny`. */
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
 * Combines the results of `hook` for one event. `isRequired` names the servers that must not
 * pass silently (SPEC 3.1): at `_PreToolUse` one that did not answer denies the call, as in
 * the agent.
 * @example
 * combineResults("_Stop", [{ server: "todo", outcome: "objection", text: "2 open", durationMs: 3 }], () => false)
 * // { block: '{"hook":"_Stop","server":"todo","text":"2 open"}', notes: [] }
 */
export function combineResults(
  hook: HookName,
  results: readonly HookResult[],
  isRequired: (server: string) => boolean,
): BridgeAnswer {
  const answer: BridgeAnswer = { notes: [] };
  const effect = HOOK_POINTS[hook].effect;
  for (const r of results) {
    if (r.message !== undefined) answer.notes.push(r.message);
    const system = r.decision?.systemMessage?.trim();
    if (system) answer.notes.push(`${r.server}: ${system}`);
  }
  const halted = results.find((r) => r.decision?.continue === false);
  if (halted !== undefined) {
    answer.halt = halted.decision?.stopReason?.trim() || `${hook} of "${halted.server}" halted the prompt`;
  }
  const said = results.filter((r) => r.outcome === "objection" && r.text !== undefined);
  const lines = (list: readonly HookResult[]) => list.map((r) => noteText(hook, r.server, r.text!)).join("\n");
  if (effect === "objection") {
    if (said.length > 0 && halted === undefined) answer.block = lines(said);
  } else if (effect === "deny") {
    const unread = (r: HookResult) =>
      r.outcome === "none" && r.message !== undefined &&
      (r.decision === undefined || Object.keys(r.decision).length === 0);
    const failed = results.filter((r) =>
      (r.outcome === "timeout" || r.outcome === "error" || unread(r)) && isRequired(r.server)
    );
    if (failed.length > 0) {
      const why = failed.map((r) => r.message ?? r.outcome).join("; ");
      const text = `the required guard did not answer, so the call was not run (${why})`;
      answer.permission = { decision: "deny", reason: noteText(hook, failed.map((r) => r.server).join(", "), text) };
      return answer;
    }
    const list = verdicts(results, (text) => ({ decision: "deny", reason: text }));
    const combined = combinePreToolUse(list);
    const context = combined.context.map((c) => noteText(hook, c.server, c.text));
    if (context.length > 0) answer.context = context.join("\n");
    if (halted !== undefined) {
      answer.permission = { decision: "deny", reason: noteText(hook, halted.server, answer.halt!) };
    } else if (combined.decision === "deny" || combined.decision === "ask") {
      answer.permission = {
        decision: combined.decision,
        reason: noteText(hook, combined.servers.join(", "), combined.reason ?? combined.decision),
      };
      if (combined.decision === "ask" && combined.updatedInput !== undefined) {
        answer.permission.updatedInput = combined.updatedInput;
      }
    } else if (combined.decision === "allow") {
      answer.permission = { decision: "allow" };
      if (combined.updatedInput !== undefined) answer.permission.updatedInput = combined.updatedInput;
    }
  } else if (effect === "append") {
    const list = verdicts(results, (text) => ({ additionalContext: text }));
    const context = list.flatMap((v) =>
      (v.decision.additionalContext ?? "").trim() === ""
        ? []
        : [noteText(hook, v.server, v.decision.additionalContext!)]
    );
    if (context.length > 0) answer.context = context.join("\n");
    const rewrites = list.filter((v) => v.decision.updatedResult !== undefined);
    const distinct = [...new Set(rewrites.map((v) => v.decision.updatedResult!))];
    if (distinct.length > 1) {
      const names = rewrites.map((v) => JSON.stringify(v.server)).join(" and ");
      answer.replaceResult = `[result withheld: conflicting rewrites of the result from ${names}]`;
    } else if (distinct.length === 1) answer.replaceResult = distinct[0]!;
  } else if (effect === "injection") {
    if (said.length > 0) answer.context = lines(said);
  } else {
    // _PreCompact's guidance and _SessionEnd's text: no host takes them from a command hook.
    for (const r of said) answer.notes.push(`${hook} of "${r.server}": ${r.text}`);
  }
  return answer;
}

/** A host's answer: the JSON for stdout (`undefined`: print nothing) and lines for stderr. */
export interface HostOutput {
  /** Printed on stdout as one line of JSON; exit status 0. */
  json: Record<string, unknown> | undefined;
  /** What the host cannot show, for stderr. */
  stderr: string[];
}

/**
 * `answer` in `host`'s words for its event `event` (which fired `hook`). The bridge always
 * exits 0 and speaks JSON, never exit status 2 (Claude Code and Gemini CLI read 2 as a block).
 * What a host cannot take goes to stderr: a Codex or Gemini CLI `ask` and a Codex rewrite
 * become a deny (neither host's hooks can ask or rewrite there, and passing the call silently
 * would fail open); Copilot CLI reads only `preToolUse`'s and the stops' answers.
 * @example
 * hostOutput("claude", "SubagentStop", "_SubagentStop", { block: "…", notes: [] }).json // { decision: "block", reason: "…" }
 */
export function hostOutput(host: HostName, event: string, hook: HookName, answer: BridgeAnswer): HostOutput {
  const stderr = [...answer.notes];
  const effect = HOOK_POINTS[hook].effect;
  const json: Record<string, unknown> = {};
  const title = HOST_TITLES[host];
  const lost = (what: string) => stderr.push(`${title}'s ${event} hook cannot take ${what}: not delivered`);
  let context = answer.context;
  if (answer.replaceResult !== undefined && !(host === "gemini" && effect === "append")) {
    // Only Gemini CLI lets a command hook replace a tool's result: elsewhere the model reads it as context.
    const note = `The hook replaced the tool's result with: ${answer.replaceResult}`;
    context = context === undefined ? note : `${context}\n${note}`;
  }
  const permission = answer.permission === undefined ? undefined : { ...answer.permission };
  if (permission !== undefined && (host === "codex" || host === "gemini")) {
    // Neither host's hooks can ask; Codex's cannot rewrite. A deny tells the model why.
    if (permission.decision === "ask") {
      permission.decision = "deny";
      permission.reason = `${permission.reason} (permission was asked for, and ${title}'s hooks cannot ask)`;
    } else if (host === "codex" && permission.updatedInput !== undefined) {
      permission.decision = "deny";
      permission.reason = `the arguments were rewritten to ${
        JSON.stringify(permission.updatedInput)
      }, and ${title}'s hooks cannot rewrite them: the call was not run; call the tool with those arguments`;
      delete permission.updatedInput;
    }
  }

  if (host === "copilot") {
    if (answer.halt !== undefined) stderr.push(`halt not delivered (Copilot CLI's hooks cannot halt): ${answer.halt}`);
    if (effect === "deny" && permission !== undefined) {
      json.permissionDecision = permission.decision;
      if (permission.reason !== undefined) json.permissionDecisionReason = permission.reason;
      if (permission.updatedInput !== undefined) json.modifiedArgs = permission.updatedInput;
      if (context !== undefined) lost(`additionalContext (${context})`);
    } else if (effect === "objection" && answer.block !== undefined) {
      json.decision = "block";
      json.reason = answer.block;
    } else if (/Failure$/.test(event) && context !== undefined) {
      json.additionalContext = context;
    } else if (context !== undefined) lost(`context (${context})`);
    return { json: Object.keys(json).length === 0 ? undefined : json, stderr };
  }

  const specific: Record<string, unknown> = {};
  if (effect === "objection") {
    if (answer.block !== undefined) {
      json.decision = host === "gemini" ? "deny" : "block";
      json.reason = answer.block;
    }
  } else if (effect === "deny") {
    if (host === "gemini") {
      if (permission?.decision === "deny") {
        json.decision = "deny";
        json.reason = permission.reason;
      } else if (permission?.updatedInput !== undefined) specific.tool_input = permission.updatedInput;
      if (context !== undefined) lost(`additionalContext (${context})`);
    } else {
      // Codex's hooks take only deny; allow (no rewrite) says nothing there, the host's own policy decides.
      if (permission !== undefined && !(host === "codex" && permission.decision === "allow")) {
        specific.permissionDecision = permission.decision;
        if (permission.reason !== undefined) specific.permissionDecisionReason = permission.reason;
        if (permission.updatedInput !== undefined) specific.updatedInput = permission.updatedInput;
      }
      if (context !== undefined) specific.additionalContext = context;
    }
  } else if (effect === "append") {
    if (host === "gemini" && answer.replaceResult !== undefined) {
      json.decision = "deny";
      json.reason = answer.replaceResult;
    }
    if (context !== undefined) specific.additionalContext = context;
  } else if (effect === "injection") {
    if (context !== undefined) specific.additionalContext = context;
  }
  if (Object.keys(specific).length > 0) {
    json.hookSpecificOutput = host === "gemini" ? specific : { hookEventName: event, ...specific };
  }
  if (answer.halt !== undefined) {
    json.continue = false;
    json.stopReason = answer.halt;
  }
  // Codex's SessionEnd publishes no output schema: it gets nothing on stdout.
  const quiet = host === "codex" && effect === "log";
  if (answer.notes.length > 0 && !quiet) json.systemMessage = answer.notes.join("\n");
  return { json: Object.keys(json).length === 0 || quiet ? undefined : json, stderr };
}
