/**
 * Running subagents (SPEC section 13): each subagent is a tool of the parent's session
 * (`subagent_<name>`, lib/subagents/tools.ts); a call runs a child session with a fresh
 * history, the subagent's instructions as its system prompt, the parent's permission policy
 * and person, the tools its definition allows (never more than the parent's) and its own
 * limits, and answers with the child's report (lib/subagents/report.ts). The child's events
 * reach the parent wrapped in `subagent` events; its history goes to the parent's transcript.
 * @module
 */

import type { Config } from "../config/config.ts";
import { numberedCallId } from "../conversation/call-ids.ts";
import type { AgentEvent, PromptResult } from "../conversation/events.ts";
import type { HistoryItem, Model, ToolCall } from "../conversation/types.ts";
import type { HookAgent } from "../hooks/points.ts";
import type { PermissionAsk } from "../hooks/permission.ts";
import type { InProcessHooks } from "../hooks/runner.ts";
import type { ToolOutcome, ToolRegistry } from "../mcp/types.ts";
import { DEFAULT_SUBAGENT_DEPTH, type SubagentDefinition } from "../subagents/definitions.ts";
import { AgentError } from "../util/errors.ts";
import { type AgentOptions, isModel, modelFrom } from "./options.ts";

export { checkSubagents } from "../subagents/definitions.ts";
import { subagentReport } from "../subagents/report.ts";
import { subagentToolName, toolAllowed, toolView } from "../subagents/tools.ts";
import { formatSeconds } from "../util/time.ts";
import { AgentSession } from "./loop.ts";
import type { LocalTools } from "./tool-calls.ts";

/** What a child's run leaves for the parent's transcript (SPEC 12.2's `subagent` record). */
export interface SubagentRun {
  /** The parent's tool call that ran it. */
  toolCallId: string;
  /** The child. */
  agent: HookAgent;
  /** The child's whole history. */
  items: HistoryItem[];
  /** How its prompt ended (`error` when it failed). */
  stopReason: PromptResult["stopReason"] | "error";
}

/** Options of {@link Subagents}. */
export interface SubagentsOptions {
  /** The definitions, checked (`checkSubagents`). */
  definitions: readonly SubagentDefinition[];
  /** The parent's configuration: the child's is it with the subagent's instructions and limits. */
  config: Config;
  /** The parent's model; a definition's own model comes from `models`. */
  model: Model;
  /** The models of definitions that name one, by subagent name. */
  models?: ReadonlyMap<string, Model>;
  /** The parent's servers, as the parent sees them without subagent tools. */
  registry: ToolRegistry;
  /** The session id every server sees. */
  sessionId: string;
  /** The depth of the session these subagents are children of (0 for the session's own agent). */
  depth: number;
  /** How deep subagents may nest (`maxSubagentDepth`, default 1). */
  maxDepth: number;
  cwd: string;
  hooks?: InProcessHooks;
  ask?: PermissionAsk;
  remembered: Map<string, "allow" | "deny">;
  now?: () => number;
  /** Receives each child's history when it ends (the parent's transcript). */
  record?: (run: SubagentRun) => void;
  /** Mints child ids, shared down the tree; default a counter of this set. */
  nextId?: () => string;
}

/**
 * The subagents of one session: the {@link LocalTools} its loop runs, and the tool view it
 * lists them in.
 */
export class Subagents implements LocalTools {
  readonly #options: SubagentsOptions;
  readonly #byTool: Map<string, SubagentDefinition>;
  readonly #nextId: () => string;

  constructor(options: SubagentsOptions) {
    this.#options = options;
    this.#byTool = new Map(options.definitions.map((d) => [subagentToolName(d.name), d]));
    let n = 0;
    this.#nextId = options.nextId ?? (() => numberedCallId("agnt", ++n));
  }

  /** True when this session may call subagents at all (its depth is below the bound). */
  get enabled(): boolean {
    return this.#byTool.size > 0 && this.#options.depth < this.#options.maxDepth;
  }

  /** The parent's registry with the subagent tools added (when the depth allows them). */
  view(): ToolRegistry {
    return toolView(this.#options.registry, { subagents: this.enabled ? this.#options.definitions : [] });
  }

  has(name: string): boolean {
    return this.enabled && this.#byTool.has(name);
  }

  async call(
    call: ToolCall,
    args: Record<string, unknown>,
    { signal, emit }: { signal: AbortSignal; emit: (event: AgentEvent) => void },
  ): Promise<ToolOutcome> {
    const def = this.#byTool.get(call.name);
    const fail = (text: string): ToolOutcome => ({ content: [{ type: "text", text }], isError: true });
    if (def === undefined) return fail(`unknown tool: ${call.name}`);
    const task = typeof args.task === "string" ? args.task.trim() : "";
    if (task === "") return fail(`Invalid tool arguments: subagent "${def.name}" needs a non-empty "task" string`);
    const o = this.#options;
    const agent: HookAgent = {
      session: o.sessionId,
      id: this.#nextId(),
      name: def.name,
      depth: o.depth + 1,
      toolCallId: call.id,
    };
    const config: Config = {
      ...o.config,
      systemPrompt: def.instructions,
      maxRounds: def.maxRounds ?? o.config.maxRounds,
    };
    // The child sees only what its definition allows of the parent's tools (SPEC 13.3).
    const base = toolView(o.registry, { allow: (name, server) => toolAllowed(def.tools, name, server) });
    const nested = new Subagents({ ...o, registry: base, depth: o.depth + 1, nextId: this.#nextId });
    const child = new AgentSession({
      config,
      model: o.models?.get(def.name) ?? o.model,
      registry: nested.view(),
      id: agent.id,
      cwd: o.cwd,
      child: { agent, maxTokens: def.maxTokens ?? 0 },
      localTools: nested,
      remembered: o.remembered,
      ...(o.hooks === undefined ? {} : { hooks: o.hooks }),
      ...(o.ask === undefined ? {} : { ask: o.ask }),
      ...(o.now === undefined ? {} : { now: o.now }),
    });
    // The parent's cancel reaches the child; so does the subagent's own time limit.
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const limit = def.timeoutMs ?? 0;
    const timer = limit > 0
      ? setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, limit)
      : undefined;
    let result: PromptResult | undefined;
    let failure: string | undefined;
    try {
      const run = child.prompt(task, { signal: controller.signal });
      for await (const event of run) {
        emit({ type: "subagent", toolCallId: call.id, agentId: agent.id, name: def.name, event });
      }
      result = await run.result;
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    }
    o.record?.({
      toolCallId: call.id,
      agent,
      items: [...child.history],
      stopReason: result?.stopReason ?? "error",
    });
    const report = subagentReport(child.history);
    const quoted = JSON.stringify(def.name);
    const withNote = (note: string, isError: boolean): ToolOutcome => ({
      content: [{ type: "text", text: report === "" ? note : `${report}\n\n${note}` }],
      isError,
    });
    if (failure !== undefined) return withNote(`[subagent ${quoted} failed: ${failure}]`, true);
    const r = result!;
    if (r.stopReason === "cancelled") {
      if (timedOut) {
        return withNote(
          `[subagent ${quoted} stopped: its time limit of ${formatSeconds(limit)} s ran out]`,
          report === "",
        );
      }
      return fail("cancelled");
    }
    if (r.stopReason === "refusal") return withNote(`[subagent ${quoted} refused: ${r.refusal ?? ""}]`, true);
    if (r.halt !== undefined) {
      return withNote(
        `[subagent ${quoted} was halted by ${r.halt.hook} of "${r.halt.server}": ${r.halt.reason}]`,
        false,
      );
    }
    if (r.limit !== undefined) {
      return withNote(`[subagent ${quoted} stopped before it finished: ${r.limit.reason}]`, report === "");
    }
    if (r.stopReason === "max_turn_requests") {
      return withNote(
        `[subagent ${quoted} stopped before it finished: it used its ${config.maxRounds} rounds]`,
        report === "",
      );
    }
    if (r.stopReason === "max_pause_turns") {
      return withNote(
        `[subagent ${quoted} stopped before it finished: the provider paused its turn more times in a row than the agent continues it]`,
        report === "",
      );
    }
    if (r.stopReason === "max_tokens") {
      return withNote(`[subagent ${quoted} stopped: its last response hit the output token limit]`, report === "");
    }
    return {
      content: [{ type: "text", text: report === "" ? `(subagent ${quoted} gave no answer)` : report }],
      isError: false,
    };
  }
}

/** One warning per `tools` entry of a subagent that matches none of `registry`'s tools. */
export async function unmatchedToolWarnings(
  subagents: readonly SubagentDefinition[],
  registry: ToolRegistry,
): Promise<string[]> {
  const tools = (await registry.listTools()).flatMap((t) => {
    const route = registry.route(t.name);
    return route === undefined ? [] : [{ name: t.name, server: route.server }];
  });
  const warnings: string[] = [];
  for (const def of subagents) {
    for (const pattern of def.tools ?? []) {
      if (tools.some((t) => toolAllowed([pattern], t.name, t.server))) continue;
      const where = def.source === undefined ? "" : ` (${def.source})`;
      warnings.push(
        `Subagent ${JSON.stringify(def.name)}${where}: its tools entry ${
          JSON.stringify(pattern)
        } matches no tool of this agent ` +
          "(entries are globs over qualified names such as fs__read_file, or server names)",
      );
    }
  }
  return warnings;
}

/** `maxSubagentDepth`, checked: a whole number of at least 0 (default {@link DEFAULT_SUBAGENT_DEPTH}). */
export function subagentDepth(value: unknown): number {
  if (value === undefined) return DEFAULT_SUBAGENT_DEPTH;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > 8) {
    throw new AgentError(
      "config",
      `Invalid maxSubagentDepth: ${JSON.stringify(value)} must be a whole number from 0 to 8`,
    );
  }
  return value;
}

/**
 * The models of the subagents that name their own: a ready `Model` as it is; a model id on the
 * parent's provider (its key, URL and limits), which a ready parent `Model` cannot give.
 * @throws {AgentError} `config` naming the subagent's `model`
 */
export async function subagentModels(
  options: AgentOptions,
  subagents: readonly SubagentDefinition[],
  config: Config,
): Promise<Map<string, Model>> {
  const models = new Map<string, Model>();
  for (const [i, def] of subagents.entries()) {
    if (def.model === undefined) continue;
    if (typeof def.model !== "string") {
      models.set(def.name, def.model);
      continue;
    }
    const parent = options.model;
    if (isModel(parent)) {
      throw new AgentError(
        "config",
        `Invalid subagents[${i}].model: ${
          JSON.stringify(def.model)
        } needs the parent's model options, and the parent's model is a ready Model (give the subagent a Model instead)`,
      );
    }
    // A scripted parent has no model ids: its subagents share its script.
    if (parent.provider !== "scripted") {
      models.set(def.name, await modelFrom({ ...parent, model: def.model }, config, options.fetch));
    }
  }
  return models;
}
