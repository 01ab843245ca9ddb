/**
 * Subagent definitions (SPEC section 13.1): what `createAgent({subagents})` takes and what an
 * agent file becomes, checked here once. A bad option throws an `AgentError("config")` naming
 * the field; a bad file is a warning naming the file and the field, never a crash.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { parseFrontMatter } from "./front-matter.ts";

/** A subagent's name: 1 to 48 lower-case letters, digits and `-`, starting with a letter or digit. */
export const SUBAGENT_NAME_PATTERN: RegExp = /^[a-z0-9][a-z0-9-]{0,47}$/;

/**
 * How deep subagents may nest by default (SPEC 13.3): the session's own agent is depth 0, its
 * children depth 1; a child sees no subagent tools unless `maxSubagentDepth` is raised.
 */
export const DEFAULT_SUBAGENT_DEPTH = 1;

/**
 * One subagent, as `createAgent({subagents: [...]})` takes it (an agent file gives the same
 * fields, SPEC 13.2).
 * @example
 * const reviewer: SubagentDefinition = {
 *   name: "reviewer",
 *   description: "Reviews a diff and reports problems; give it the diff or the files to read.",
 *   instructions: "You review code. Report each problem with its file and line.",
 *   tools: ["fs__read_*", "git"],
 *   maxRounds: 10,
 * };
 */
export interface SubagentDefinition {
  /** Its name ({@link SUBAGENT_NAME_PATTERN}); the model's tool is `subagent_<name>`. */
  name: string;
  /** What the model reads in the tool's description: when to hand it a task. Non-empty, at most 1024 bytes sent. */
  description: string;
  /** The child's system prompt (an agent file's body). Non-empty. */
  instructions: string;
  /**
   * The tools it may use: globs over the parent's qualified tool names (`fs__read_*`; `*` any
   * run, `?` one character), or a server's name alone for all of that server's tools (`fs`).
   * Default: every tool the parent has. Never more than the parent's: the child sees only
   * tools the parent's servers list.
   */
  tools?: readonly string[] | undefined;
  /**
   * A model id on the parent's provider (`claude-haiku-4-5`, `gpt-4.1-mini`), `"inherit"` or
   * absent for the parent's model. In code, also a ready `Model`.
   */
  model?: string | import("../conversation/types.ts").Model | undefined;
  /** LLM rounds per task; default the parent's `maxRounds` (0 = no bound). */
  maxRounds?: number | undefined;
  /** Input plus output tokens per task, summed over its rounds; default 0 = no bound. */
  maxTokens?: number | undefined;
  /** Wall-clock time per task in ms; default 0 = no bound (the parent's cancel always applies). */
  timeoutMs?: number | undefined;
  /** The file it was read from, for messages; absent for a definition given in code. */
  source?: string | undefined;
}

function invalid(option: string, message: string): never {
  throw new AgentError("config", `Invalid ${option}: ${message}`);
}

/**
 * `createAgent`'s `subagents`, checked: names legal and distinct, text fields non-empty,
 * tools non-empty strings, limits whole numbers ≥ 0.
 * @throws {AgentError} `config` naming the option and field (`Invalid subagents[1].name: …`)
 * @example checkSubagents([{ name: "r", description: "d", instructions: "i" }], "subagents")
 */
export function checkSubagents(list: unknown, option = "subagents"): SubagentDefinition[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) invalid(option, "it must be an array of subagent definitions");
  const seen = new Set<string>();
  return list.map((raw, i) => {
    const at = `${option}[${i}]`;
    const problem = definitionProblem(raw);
    if (problem !== undefined) invalid(`${at}.${problem.field}`, problem.message);
    const def = raw as SubagentDefinition;
    if (seen.has(def.name)) invalid(`${at}.name`, `${JSON.stringify(def.name)} is given twice`);
    seen.add(def.name);
    return normalised(def);
  });
}

/** The first problem of a definition, as the field and a message; `undefined` when it is good. */
function definitionProblem(raw: unknown): { field: string; message: string } | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { field: "", message: "not an object" };
  const def = raw as Record<string, unknown>;
  if (typeof def.name !== "string" || !SUBAGENT_NAME_PATTERN.test(def.name)) {
    return {
      field: "name",
      message: `${
        JSON.stringify(def.name)
      } must be 1 to 48 lower-case letters, digits and -, starting with a letter or digit`,
    };
  }
  for (const field of ["description", "instructions"]) {
    if (typeof def[field] !== "string" || (def[field] as string).trim() === "") {
      return { field, message: "it must be a non-empty string" };
    }
  }
  const tools = def.tools;
  if (
    tools !== undefined &&
    (!Array.isArray(tools) || tools.some((t) => typeof t !== "string" || t.trim() === ""))
  ) {
    return { field: "tools", message: "it must be an array of non-empty strings (globs or server names)" };
  }
  const model = def.model;
  if (
    model !== undefined && !(typeof model === "string" && model.trim() !== "") &&
    !(typeof model === "object" && model !== null && typeof (model as { complete?: unknown }).complete === "function")
  ) {
    return { field: "model", message: 'it must be a model id, "inherit" or a Model' };
  }
  for (const field of ["maxRounds", "maxTokens", "timeoutMs"]) {
    const v = def[field];
    if (v !== undefined && (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)) {
      return { field, message: `${JSON.stringify(v)} is not a whole number of at least 0` };
    }
  }
  return undefined;
}

function normalised(def: SubagentDefinition): SubagentDefinition {
  const out: SubagentDefinition = {
    name: def.name,
    description: def.description.trim(),
    instructions: def.instructions.trim(),
  };
  if (def.tools !== undefined) out.tools = def.tools.map((t) => t.trim());
  if (def.model !== undefined && def.model !== "inherit") out.model = def.model;
  if (def.maxRounds !== undefined) out.maxRounds = def.maxRounds;
  if (def.maxTokens !== undefined) out.maxTokens = def.maxTokens;
  if (def.timeoutMs !== undefined) out.timeoutMs = def.timeoutMs;
  if (def.source !== undefined) out.source = def.source;
  return out;
}

/**
 * An agent file (SPEC 13.2, the format of Claude Code's `.claude/agents/*.md`): front matter
 * with `name`, `description`, and optionally `tools` (a comma-separated string or a list),
 * `model`, `maxRounds`, `maxTokens`, `timeoutSecs`; the body is the instructions. Other fields
 * (`color`, …) are ignored. Never throws.
 * @param path the file's path, named in the warning
 * @returns the definition, or a warning naming the file and the field
 * @example
 * subagentFromFile("---\nname: reviewer\ndescription: Reviews diffs\n---\nYou review code.", "/p/.sprout-agent/agents/reviewer.md")
 * // {definition: {name: "reviewer", description: "Reviews diffs", instructions: "You review code.", source: "/p/…"}}
 */
export function subagentFromFile(
  text: string,
  path: string,
): { definition: SubagentDefinition; warning?: undefined } | { definition?: undefined; warning: string } {
  const skip = (why: string) => ({ warning: `Skipped agent file ${JSON.stringify(path)}: ${why}` });
  const { fields, body, problems, found } = parseFrontMatter(text);
  if (!found) return skip("it has no front matter (a --- line, name: and description:, a --- line)");
  if (problems.length > 0) return skip(problems.join("; "));
  const str = (key: string): string | undefined => {
    const v = fields[key];
    return typeof v === "string" ? v : undefined;
  };
  const def: Record<string, unknown> = { name: fields.name, description: fields.description, instructions: body };
  if (Array.isArray(fields.name)) return skip(`field "name" must be one value, not a list`);
  if (Array.isArray(fields.description)) return skip(`field "description" must be one value, not a list`);
  const tools = fields.tools;
  if (tools !== undefined) {
    const list = (Array.isArray(tools) ? tools : tools.split(",")).map((t) => t.trim()).filter((t) => t !== "");
    if (list.length === 0) return skip(`field "tools" names no tool (leave it out for every tool)`);
    def.tools = list;
  }
  if (fields.model !== undefined) {
    if (str("model") === undefined || str("model")!.trim() === "") return skip(`field "model" must be a model id`);
    def.model = str("model")!.trim();
  }
  for (
    const [key, target, scale] of [
      ["maxRounds", "maxRounds", 1],
      ["maxTokens", "maxTokens", 1],
      ["timeoutSecs", "timeoutMs", 1000],
    ] as const
  ) {
    const raw = fields[key];
    if (raw === undefined) continue;
    const n = typeof raw === "string" && /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (!Number.isSafeInteger(n * scale)) {
      return skip(`field "${key}" must be a whole number, not ${JSON.stringify(raw)}`);
    }
    def[target] = n * scale;
  }
  const problem = definitionProblem(def);
  if (problem !== undefined) {
    const field = problem.field === "instructions" ? "instructions (the body after the front matter)" : problem.field;
    return skip(`field "${field}": ${problem.message}`);
  }
  return { definition: normalised({ ...(def as unknown as SubagentDefinition), source: path }) };
}
