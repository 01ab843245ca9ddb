/**
 * The pure parts of the tool registry (`registry.ts`): LLM-legal tool names, input schemas
 * rewritten to object schemas, clamped descriptions and tool results mapped to history
 * blocks. SPEC sections 5 and 6.7.
 * @module
 */

import type { ResultBlock } from "../conversation/types.ts";
import type { CallToolResult, ToolOutcome } from "./types.ts";

import { base64DecodedBytes } from "../util/base64.ts";
import { sha256Hex } from "../util/sha256.ts";
import { clampUtf8 } from "../util/utf8.ts";

/**
 * The tool names both LLM APIs accept (SPEC section 5.1): 1 to 64 of `[a-zA-Z0-9_-]`. Names
 * the registry offers are mapped to match it; a name the model sends that does not match is
 * refused by the loop (`prepareToolCalls`).
 * @example TOOL_NAME_PATTERN.test("fs__read_file") // true
 */
export const TOOL_NAME_PATTERN: RegExp = /^[a-zA-Z0-9_-]{1,64}$/;

/** Longest description sent to the LLM, in UTF-8 bytes (SPEC section 5.4). */
export const MAX_DESCRIPTION_BYTES = 1024;

/** Appended to text the agent cut to a byte limit (descriptions, hook output). */
export const TRUNCATED_MARKER = "\n[truncated]";

/**
 * Session-wide table of the names the LLM sees (SPEC section 5.1). A legal qualified name
 * `<server>__<bare>` is used as is; any other (characters outside `[a-zA-Z0-9_-]`, or longer
 * than 64) becomes `<server>__<bare with illegal characters as _, cut>_<8 hex of a hash>`.
 * A name is assigned once per `(server, bare)` and never changes for the session (so it
 * survives re-listing and restarts); no two pairs ever share a name.
 * @example
 * const names = new ToolNames();
 * names.nameFor("fs", "read") // "fs__read"
 * names.nameFor("fs", "fs.read/file") // "fs__fs_read_file_1a2b3c4d" (hash varies)
 */
export class ToolNames {
  #byKey = new Map<string, string>();
  #byName = new Map<string, { server: string; bare: string }>();

  /** The LLM-visible name of `bare` on `server`, assigning one on first use. */
  nameFor(server: string, bare: string): string {
    const key = `${server}\u0000${bare}`;
    const known = this.#byKey.get(key);
    if (known !== undefined) return known;
    const plain = `${server}__${bare}`;
    let name = TOOL_NAME_PATTERN.test(plain) && !this.#byName.has(plain) ? plain : mappedName(server, bare, 0);
    for (let salt = 1; this.#byName.has(name); salt++) name = mappedName(server, bare, salt);
    this.#byKey.set(key, name);
    this.#byName.set(name, { server, bare });
    return name;
  }

  /** The `(server, bare)` pair behind an assigned name, or `undefined`. */
  lookup(name: string): { server: string; bare: string } | undefined {
    return this.#byName.get(name);
  }
}

function mappedName(server: string, bare: string, salt: number): string {
  const hash = sha256Hex(`${salt}\u0000${server}\u0000${bare}`).slice(0, 8);
  const base = `${server}__${bare.replace(/[^a-zA-Z0-9_-]/g, "_")}`.slice(0, 64 - 9);
  return `${base}_${hash}`;
}

/** A tool description for the LLM: `description`, else `title`, clamped to 1024 bytes. */
export function toolDescription(tool: { description?: unknown; title?: unknown }): string {
  const raw = typeof tool.description === "string"
    ? tool.description
    : typeof tool.title === "string"
    ? tool.title
    : "";
  return clampUtf8(raw, MAX_DESCRIPTION_BYTES, TRUNCATED_MARKER);
}

type Json = Record<string, unknown>;

function isPlainObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const COMBINATORS = ["anyOf", "oneOf", "allOf"] as const;

/**
 * Rewrites a tool's `inputSchema` into a JSON Schema with `"type": "object"` at the top
 * (SPEC section 5.4, CASES C15), or says why it cannot:
 * - absent → `{type: "object", properties: {}}`;
 * - `type` missing → `type: "object"` added; `type: ["object", "null"]` → `"object"`;
 * - a top-level `anyOf`/`oneOf`/`allOf` whose branches all allow an object (no `type`, or
 *   `"object"`; `{required: [...]}` branches included) → one object schema with the
 *   branches' properties merged (`required`: the union for `allOf`, the
 *   intersection for `anyOf`/`oneOf`), the combinator removed;
 * - `required` that is not a list of names → its names kept (or dropped);
 * - anything else (a non-object `type`, a non-object branch, `properties` that are not an
 *   object of schemas, not a JSON object) → `skip`.
 */
export function objectSchema(schema: unknown): { schema: Json } | { skip: string } {
  if (schema === undefined || schema === null) return { schema: { type: "object", properties: {} } };
  if (!isPlainObject(schema)) return { skip: "its input schema is not a JSON object" };
  const typeError = nonObjectType(schema.type);
  if (typeError !== undefined) return { skip: `its input schema has type ${typeError}, not "object"` };
  const propertiesError = badProperties(schema.properties);
  if (propertiesError !== undefined) return { skip: `its input schema has ${propertiesError}` };
  const out: Json = { ...schema, type: "object" };
  // A `required` that is not a list of names would make the API refuse the request: keep the names.
  if (schema.required !== undefined) {
    const names = strings(schema.required);
    if (names.length > 0) out.required = names;
    else delete out.required;
  }
  const branches: { kind: string; schema: Json }[] = [];
  for (const kind of COMBINATORS) {
    const list = schema[kind];
    if (list === undefined) continue;
    delete out[kind];
    if (!Array.isArray(list)) return { skip: `its input schema has a top-level ${kind} that is not a list` };
    for (const branch of list) {
      if (!isPlainObject(branch) || nonObjectType(branch.type) !== undefined) {
        return { skip: `its input schema has a top-level ${kind} with a branch that is not an object schema` };
      }
      branches.push({ kind, schema: branch });
    }
  }
  if (branches.length === 0) return { schema: out };
  const properties: Json = isPlainObject(schema.properties) ? { ...schema.properties } : {};
  for (const { schema: branch } of branches) {
    if (!isPlainObject(branch.properties)) continue;
    for (const [key, value] of Object.entries(branch.properties)) if (!(key in properties)) properties[key] = value;
  }
  out.properties = properties;
  const required = new Set(strings(schema.required));
  const all = branches.filter((b) => b.kind === "allOf");
  for (const b of all) for (const name of strings(b.schema.required)) required.add(name);
  const alternatives = branches.filter((b) => b.kind !== "allOf");
  if (alternatives.length > 0) {
    const [first, ...rest] = alternatives.map((b) => new Set(strings(b.schema.required)));
    for (const name of first ?? []) if (rest.every((set) => set.has(name))) required.add(name);
  }
  if (required.size > 0) out.required = [...required];
  else delete out.required;
  return { schema: out };
}

/** Why `properties` is not an object of schemas, or `undefined` when it is (or is absent). */
function badProperties(properties: unknown): string | undefined {
  if (properties === undefined) return undefined;
  if (!isPlainObject(properties)) return "properties that are not an object";
  const bad = Object.entries(properties).find(([, p]) => !isPlainObject(p) && typeof p !== "boolean");
  return bad === undefined ? undefined : `property ${JSON.stringify(bad[0])} whose schema is not an object`;
}

/** `undefined` when `type` allows an object, else its JSON text. */
function nonObjectType(type: unknown): string | undefined {
  if (type === undefined || type === "object") return undefined;
  if (Array.isArray(type) && type.includes("object")) return undefined;
  return JSON.stringify(type);
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/**
 * Maps an MCP `tools/call` result to the loop's {@link ToolOutcome} (SPEC section 6.7): text
 * blocks stay text, images stay images, audio becomes `[audio: <mime>, <n> bytes]`, a
 * resource link `[resource: <uri>]`, an embedded resource its text or `[resource: <uri>]`,
 * anything else `[<type> content]`. Empty content stays empty (the loop adds `(no output)`);
 * when there is no content but `structuredContent`, its JSON is the text.
 */
export function toolOutcome(result: CallToolResult): ToolOutcome {
  const content: ResultBlock[] = [];
  const blocks: unknown[] = Array.isArray(result.content) ? result.content : [];
  for (const raw of blocks) {
    if (!isPlainObject(raw)) continue;
    const text = (t: string) => content.push({ type: "text", text: t });
    switch (raw.type) {
      case "text":
        text(typeof raw.text === "string" ? raw.text : "");
        break;
      case "image":
        content.push({ type: "image", mimeType: String(raw.mimeType ?? "image/png"), data: String(raw.data ?? "") });
        break;
      case "audio":
        text(`[audio: ${String(raw.mimeType ?? "unknown")}, ${base64DecodedBytes(String(raw.data ?? ""))} bytes]`);
        break;
      case "resource_link":
        text(`[resource: ${String(raw.uri ?? "")}]`);
        break;
      case "resource": {
        const resource = isPlainObject(raw.resource) ? raw.resource : {};
        text(typeof resource.text === "string" ? resource.text : `[resource: ${String(resource.uri ?? "")}]`);
        break;
      }
      default:
        text(`[${String(raw.type)} content]`);
    }
  }
  if (content.length === 0 && result.structuredContent !== undefined) {
    content.push({ type: "text", text: JSON.stringify(result.structuredContent) });
  }
  return { content, isError: result.isError === true };
}
