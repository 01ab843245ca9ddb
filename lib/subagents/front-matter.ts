/**
 * The front matter of an agent file (SPEC section 13.2): a `---` line, `key: value` lines, a
 * `---` line, then the Markdown body. A small subset of YAML, enough for the files Claude Code
 * and its peers share: plain, single- or double-quoted scalars, `|` and `>` block scalars,
 * flow lists (`[a, b]`) and block lists (`- a`), `#` comments. Never throws: a line it cannot
 * read is a problem naming its line.
 * @module
 */

/** A front-matter value: a string, or a list of strings. */
export type FrontMatterValue = string | string[];

/** What {@link parseFrontMatter} read. */
export interface FrontMatter {
  /** The fields in file order; a repeated key keeps its last value (with a problem). */
  fields: Record<string, FrontMatterValue>;
  /** The text after the closing `---` line, trimmed. */
  body: string;
  /** One sentence per line that could not be read (`line 3: …`). */
  problems: string[];
  /** False when the text does not open with a `---` line (then `body` is the whole text). */
  found: boolean;
}

/**
 * Splits `text` into front-matter fields and body.
 * @example
 * parseFrontMatter("---\nname: reviewer\ntools: Read, Grep\n---\nReview the diff.")
 * // {fields: {name: "reviewer", tools: "Read, Grep"}, body: "Review the diff.", problems: [], found: true}
 */
export function parseFrontMatter(text: string): FrontMatter {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trim() !== "---") return { fields: {}, body: text.trim(), problems: [], found: false };
  const end = lines.findIndex((l, i) => i > 0 && (l.trim() === "---" || l.trim() === "..."));
  // A Map, then own properties: a key such as `__proto__` is a field like any other.
  const fields = new Map<string, FrontMatterValue>();
  const problems: string[] = [];
  if (end === -1) {
    return { fields: {}, body: "", problems: ["the front matter has no closing --- line"], found: true };
  }
  let i = 1;
  while (i < end) {
    const line = lines[i]!;
    const number = i + 1;
    i++;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const match = /^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$/.exec(line);
    if (match === null) {
      problems.push(`line ${number}: not a "key: value" line`);
      continue;
    }
    const key = match[1]!;
    const rest = stripComment(match[2]!.trim());
    let value: FrontMatterValue;
    if (rest === "|" || rest === ">" || /^[|>][+-]?$/.test(rest)) {
      const block: string[] = [];
      while (i < end && (lines[i]!.trim() === "" || /^\s/.test(lines[i]!))) block.push(lines[i++]!);
      const indent = Math.min(...block.filter((l) => l.trim() !== "").map((l) => l.length - l.trimStart().length));
      const body = block.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
      value = rest.startsWith("|") ? body.join("\n").trim() : foldLines(body);
    } else if (rest === "") {
      const items: string[] = [];
      while (i < end && /^\s*-(\s|$)/.test(lines[i]!)) {
        const item = scalar(stripComment(lines[i]!.replace(/^\s*-/, "").trim()));
        if (item.problem !== undefined) problems.push(`line ${i + 1}: ${item.problem}`);
        else items.push(item.value);
        i++;
      }
      value = items.length > 0 ? items : "";
    } else if (rest.startsWith("[")) {
      if (!rest.endsWith("]")) {
        problems.push(`line ${number}: a list opened with [ is not closed on its line`);
        continue;
      }
      const inner = rest.slice(1, -1).trim();
      const items = inner === "" ? [] : splitFlow(inner).map((s) => scalar(s.trim()));
      const bad = items.find((s) => s.problem !== undefined);
      if (bad !== undefined) {
        problems.push(`line ${number}: ${bad.problem}`);
        continue;
      }
      value = items.map((s) => s.value!);
    } else {
      const read = scalar(rest);
      if (read.problem !== undefined) {
        problems.push(`line ${number}: ${read.problem}`);
        continue;
      }
      value = read.value;
    }
    if (fields.has(key)) problems.push(`line ${number}: "${key}" is given twice; the last one counts`);
    fields.set(key, value);
  }
  return { fields: Object.fromEntries(fields), body: lines.slice(end + 1).join("\n").trim(), problems, found: true };
}

/** `value` without a trailing ` # comment` (outside quotes). */
function stripComment(value: string): string {
  let quote = "";
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quote !== "") {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'") {
      if (i === 0 || /[\s,[]/.test(value[i - 1]!)) quote = c;
    } else if (c === "#" && (i === 0 || /\s/.test(value[i - 1]!))) return value.slice(0, i).trimEnd();
  }
  return value;
}

/** One scalar: quoted (with `\n`, `\t`, `\"`, `\\` escapes in double quotes, `''` in single) or plain. */
function scalar(raw: string): { value: string; problem?: undefined } | { value?: undefined; problem: string } {
  if (raw.startsWith('"')) {
    if (raw.length < 2 || !raw.endsWith('"') || raw.endsWith('\\"') && !raw.endsWith('\\\\"')) {
      return { problem: "a double-quoted value is not closed" };
    }
    try {
      return { value: JSON.parse(raw.replace(/\\'/g, "'")) as string };
    } catch {
      return { problem: 'a double-quoted value has an escape that is not \\n, \\t, \\", \\\\ or \\uXXXX' };
    }
  }
  if (raw.startsWith("'")) {
    if (raw.length < 2 || !raw.endsWith("'")) return { problem: "a single-quoted value is not closed" };
    return { value: raw.slice(1, -1).replace(/''/g, "'") };
  }
  return { value: raw };
}

/** The items of a flow list's inside, split at commas outside quotes. */
function splitFlow(inner: string): string[] {
  const out: string[] = [];
  let quote = "";
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i]!;
    if (quote !== "") {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ",") {
      out.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  out.push(inner.slice(start));
  return out;
}

/** A folded (`>`) block: lines joined with spaces, blank lines kept as line breaks. */
function foldLines(lines: readonly string[]): string {
  const paragraphs: string[] = [];
  let current: string[] = [];
  for (const line of lines) {
    if (line.trim() === "") {
      if (current.length > 0) paragraphs.push(current.join(" "));
      current = [];
    } else current.push(line.trim());
  }
  if (current.length > 0) paragraphs.push(current.join(" "));
  return paragraphs.join("\n");
}
