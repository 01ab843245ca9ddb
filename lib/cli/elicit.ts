/**
 * The elicitation prompt of `cli.ts run` on a terminal (SPEC section 10): an MCP server's
 * question, asked on stderr and answered on stdin, one field at a time, built from the
 * requested schema (string, number, integer, boolean, single and multiple choice; defaults;
 * required fields), or a link to open (URL mode). Used only where the permission prompt is
 * (`ask.ts`): elsewhere nobody can answer and an elicitation is declined. What the person
 * types goes to the server only: it is never logged.
 * @module
 */

import type { ElicitationRequest, ElicitationResult, InputContext } from "../mcp/input-requests.ts";
import type { LineReader } from "./ask.ts";
import { asObject } from "../util/json.ts";

/** Tries per field before the whole elicitation is cancelled. */
const TRIES = 3;

type Value = string | number | boolean | string[];

/**
 * The `elicit` of the CLI's `InputHandler`: says the question with `say` (whole lines; server
 * text in caret notation by `show`), leaves the answer's line open with `write`, and reads
 * answers through `lines` (shared with the permission prompt). `y` goes on, `n` declines,
 * `c` (or the end of stdin, or a cancel) cancels; a field with no valid answer after three
 * tries cancels.
 * @example
 * const elicit = terminalElicit((l) => console.error(l), (t) => process.stderr.write(t), lineReader(process.stdin), (t) => t);
 */
export function terminalElicit(
  say: (line: string) => void,
  write: (text: string) => void,
  lines: LineReader,
  show: (text: string) => string,
): (request: ElicitationRequest, context: InputContext) => Promise<ElicitationResult> {
  return (request, context) =>
    lines.queue(async (): Promise<ElicitationResult> => {
      const { signal } = context;
      if (signal.aborted) return { action: "cancel" };
      const who = `${context.server}${context.tool === undefined ? "" : ` (tool ${context.tool})`}`;
      const ask = async (prompt: string) => {
        write(prompt);
        const line = await lines.read(signal);
        if (line === undefined) write("\n");
        return line;
      };
      if (request.mode === "url") {
        say(`? ${show(who)} asks you to open a link: ${show(request.message)}`);
        say(`  ${show(request.url)}`);
        const word = await ask("  Open it? [y] yes, [n] decline, [c] cancel: ");
        return choice(word) ?? { action: "accept" };
      }
      say(`? ${show(who)} asks: ${show(request.message)}`);
      const word = await ask("  Answer? [y] yes, [n] decline, [c] cancel: ");
      const chosen = choice(word);
      if (chosen !== undefined) return chosen;
      const schema = request.requestedSchema;
      const properties = asObject(schema.properties) ?? {};
      const required = new Set(
        Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [],
      );
      const content: Record<string, Value> = {};
      for (const [key, raw] of Object.entries(properties)) {
        const field = asObject(raw) ?? {};
        const options = choices(field);
        const title = show(typeof field.title === "string" ? field.title : key);
        if (typeof field.description === "string" && field.description !== "") {
          say(`  ${title}: ${show(field.description)}`);
        }
        if (options !== undefined) {
          options.forEach((o, i) => say(`    ${i + 1}) ${show(o.title)}`));
        }
        const fallback = field.default as Value | undefined;
        const hint = fieldHint(field, options, fallback, required.has(key), show);
        let value: Value | undefined;
        let done = false;
        for (let attempt = 0; attempt < TRIES && !done; attempt++) {
          const line = await ask(`  ${title}${hint}: `);
          if (line === undefined || signal.aborted) return { action: "cancel" };
          const typed = line.trim();
          if (typed === "") {
            if (fallback !== undefined) [value, done] = [fallback, true];
            else if (!required.has(key)) done = true;
            else say("    an answer is required");
            continue;
          }
          const read = parseValue(typed, field, options);
          if (typeof read === "object" && read !== null && "problem" in read) say(`    ${read.problem}`);
          else [value, done] = [read as Value, true];
        }
        if (!done) {
          say(`  no valid answer for ${title}: cancelled`);
          return { action: "cancel" };
        }
        if (value !== undefined) content[key] = value;
      }
      return { action: "accept", content };
    });
}

/** `n` declines, `c` or nothing (the end of stdin) cancels, `y` and anything else go on (`undefined`). */
function choice(word: string | undefined): ElicitationResult | undefined {
  if (word === undefined) return { action: "cancel" };
  const w = word.trim().toLowerCase();
  if (w === "n" || w === "no" || w === "decline") return { action: "decline" };
  if (w === "c" || w === "cancel") return { action: "cancel" };
  if (w === "y" || w === "yes" || w === "") return undefined;
  return { action: "cancel" };
}

/** A choice field's options (`enum`, `oneOf`/`anyOf` of `const`, or an array of them), with their titles. */
function choices(field: Record<string, unknown>): { value: string; title: string }[] | undefined {
  const source = field.type === "array" ? asObject(field.items) ?? {} : field;
  if (Array.isArray(source.enum)) {
    const names = Array.isArray(source.enumNames) ? source.enumNames : [];
    return source.enum.map((v, i) => ({
      value: String(v),
      title: typeof names[i] === "string" ? names[i] : String(v),
    }));
  }
  const list = Array.isArray(source.oneOf) ? source.oneOf : Array.isArray(source.anyOf) ? source.anyOf : undefined;
  if (list === undefined) return undefined;
  return list.map((o) => asObject(o) ?? {}).filter((o) => o.const !== undefined).map((o) => ({
    value: String(o.const),
    title: typeof o.title === "string" ? o.title : String(o.const),
  }));
}

function fieldHint(
  field: Record<string, unknown>,
  options: { value: string; title: string }[] | undefined,
  fallback: Value | undefined,
  required: boolean,
  show: (text: string) => string,
): string {
  const parts: string[] = [];
  if (options !== undefined) {
    parts.push(field.type === "array" ? `numbers 1-${options.length}, comma-separated` : `1-${options.length}`);
  } else if (field.type === "boolean") parts.push("y/n");
  else if (field.type === "number" || field.type === "integer") parts.push(String(field.type));
  if (fallback !== undefined) {
    parts.push(`default ${show(Array.isArray(fallback) ? fallback.join(", ") : String(fallback))}`);
  } else if (!required) parts.push("optional");
  return parts.length === 0 ? "" : ` (${parts.join("; ")})`;
}

/** What `typed` means for `field`, or why it does not fit. */
function parseValue(
  typed: string,
  field: Record<string, unknown>,
  options: { value: string; title: string }[] | undefined,
): Value | { problem: string } {
  const pick = (word: string): string | undefined => {
    const n = Number(word);
    if (options === undefined) return undefined;
    if (Number.isInteger(n) && n >= 1 && n <= options.length) return options[n - 1]!.value;
    return options.find((o) => o.value === word || o.title === word)?.value;
  };
  if (options !== undefined) {
    if (field.type === "array") {
      const picked = typed.split(",").map((w) => w.trim()).filter((w) => w !== "").map(pick);
      if (picked.some((p) => p === undefined)) return { problem: `choose among 1-${options.length}` };
      return picked as string[];
    }
    const one = pick(typed);
    return one === undefined ? { problem: `choose one of 1-${options.length}` } : one;
  }
  if (field.type === "boolean") {
    if (/^(y|yes|true)$/i.test(typed)) return true;
    if (/^(n|no|false)$/i.test(typed)) return false;
    return { problem: "answer y or n" };
  }
  if (field.type === "number" || field.type === "integer") {
    const n = Number(typed);
    if (!Number.isFinite(n)) return { problem: "a number is needed" };
    if (field.type === "integer" && !Number.isInteger(n)) return { problem: "a whole number is needed" };
    if (typeof field.minimum === "number" && n < field.minimum) return { problem: `at least ${field.minimum}` };
    if (typeof field.maximum === "number" && n > field.maximum) return { problem: `at most ${field.maximum}` };
    return n;
  }
  if (typeof field.minLength === "number" && typed.length < field.minLength) {
    return { problem: `at least ${field.minLength} characters` };
  }
  if (typeof field.maxLength === "number" && typed.length > field.maxLength) {
    return { problem: `at most ${field.maxLength} characters` };
  }
  return typed;
}
