/**
 * `.mcp.json` → validated server configurations (SPEC sections 5.2, 10 and 11), and the
 * sanitising of server names sent by ACP clients.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { type Env, expandVars, unsetVars } from "../util/env.ts";
import type { McpServerConfig } from "./types.ts";

export { expandVars };

/** Legal server names in `.mcp.json` (SPEC section 5.2); `__` is also refused. */
export const SERVER_NAME_PATTERN: RegExp = /^[A-Za-z0-9_-]{1,64}$/;
/** At most this many servers per session (SPEC section 5.4). */
export const MAX_SERVERS = 16;

/**
 * The keys of the object at `path` inside JSON `text`, in the order they are written
 * (`JSON.parse` moves integer-like keys first; SPEC section 11 wants file order).
 * @throws {SyntaxError} when `text` is not JSON
 */
export function objectKeysInOrder(text: string, path: readonly string[]): string[] {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\r\n".includes(text[i]!)) i++;
  };
  const str = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  // Skips one value; when `want` is set and the value is an object, returns its keys.
  const value = (depth: number): string[] | undefined => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const keys: string[] = [];
      let found: string[] | undefined;
      ws();
      if (text[i] === "}") {
        i++;
        return depth === path.length ? keys : undefined;
      }
      while (i < text.length) {
        ws();
        const key = str();
        keys.push(key);
        ws();
        i++; // colon
        const inner = depth < path.length && key === path[depth]
          ? value(depth + 1)
          : (value(Number.POSITIVE_INFINITY), undefined);
        if (inner !== undefined) found = inner;
        ws();
        if (text[i] === ",") i++;
        else {
          i++;
          break;
        }
      }
      return depth === path.length ? keys : found;
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return undefined;
      }
      while (i < text.length) {
        value(Number.POSITIVE_INFINITY);
        ws();
        if (text[i++] !== ",") break;
      }
      return undefined;
    }
    if (c === '"') {
      str();
      return undefined;
    }
    while (i < text.length && !",}] \t\r\n".includes(text[i]!)) i++;
    return undefined;
  };
  JSON.parse(text); // validate first: the scanner above assumes well-formed JSON
  return value(0) ?? [];
}

/**
 * Why an HTTP header cannot be sent as configured, or `undefined` when it can: the name must be
 * an HTTP token, the value free of line breaks, NUL and characters beyond Latin-1. The value
 * itself is never quoted (it is often a credential).
 * @example headerProblem("Authorization", "Bearer a\nb") // "contains a line break, NUL or non-Latin-1 character"
 */
export function headerProblem(name: string, value: string): string | undefined {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return "is not a valid HTTP header name";
  if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) return "contains a line break, NUL or non-Latin-1 character";
  return undefined;
}

function fail(file: string, message: string): never {
  throw new AgentError("config", `Invalid MCP configuration ${JSON.stringify(file)}: ${message}`);
}

/**
 * Expands `${VAR}` in a field where an empty piece would name another program, folder or host
 * (`command`, `cwd`, `url`): a variable it uses without a default that is unset or empty is an
 * error naming the variable, the server and the field, instead of a broken value further on.
 */
function expandRequired(file: string, field: string, raw: string, env: Env): string {
  const names = unsetVars(raw, env);
  if (names.length > 0) {
    const uses = names.map((n) => `\${${n}}`).join(" and ");
    const state = names.every((n) => env[n] === undefined)
      ? "not set"
      : names.every((n) => env[n] === "")
      ? "empty"
      : "not set or empty";
    const first = names[0]!;
    fail(
      file,
      `${field} uses ${uses}, which ${names.length === 1 ? "is" : "are"} ${state} (give ${
        names.length === 1 ? "it a value" : "them values"
      } or a default: \${${first}:-…})`,
    );
  }
  return expandVars(raw, env);
}

/**
 * Refuses a top level without `mcpServers` that holds other keys, which would otherwise mean
 * no servers at all: VS Code's `.vscode/mcp.json` (`servers`) gets a hint to rename the key.
 * Keys starting with `$` (`$schema`) do not count.
 */
function checkTopLevel(file: string, root: Record<string, unknown>): void {
  const keys = Object.keys(root).filter((k) => !k.startsWith("$"));
  if ("mcpServers" in root || keys.length === 0) return;
  if ("servers" in root) {
    fail(
      file,
      `it has "servers" but no "mcpServers": that is VS Code's shape (.vscode/mcp.json); rename the key to "mcpServers"`,
    );
  }
  fail(
    file,
    `it has no "mcpServers", only ${keys.map((k) => JSON.stringify(k)).join(", ")}: put the servers under "mcpServers"`,
  );
}

function stringMap(file: string, field: string, raw: unknown, env: Env): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) fail(file, `${field} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof v !== "string") fail(file, `${field}.${k} must be a string`);
    out[k] = expandVars(v, env);
  }
  return out;
}

/**
 * Parses the text of an `.mcp.json` file.
 * @param file the file's path, for messages and to resolve a relative `cwd`
 * @param options.env for `${VAR}` expansion
 * @param options.resolvePath joins the file's folder and a relative `cwd`
 * @throws {AgentError} code `config` naming the file and the field: also for a top level with
 * keys but no `mcpServers` (VS Code's `servers`), and for an unset `${VAR}` without a default
 * in `command`, `cwd` or `url`, naming the variable
 */
export function parseMcpConfig(
  text: string,
  file: string,
  options: { env: Env; resolvePath: (base: string, relative: string) => string },
): McpServerConfig[] {
  // Editors on Windows may save the file with a byte-order mark, which JSON.parse refuses.
  if (text.startsWith("\uFEFF")) text = text.slice(1);
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch (error) {
    fail(file, `not valid JSON: ${(error as Error).message}`);
  }
  if (typeof root !== "object" || root === null || Array.isArray(root)) fail(file, "the top level must be an object");
  checkTopLevel(file, root as Record<string, unknown>);
  const servers = (root as { mcpServers?: unknown }).mcpServers;
  if (servers === undefined) return [];
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    fail(file, "mcpServers must be an object");
  }
  const names = objectKeysInOrder(text, ["mcpServers"]);
  if (names.length > MAX_SERVERS) fail(file, `${names.length} servers configured, at most ${MAX_SERVERS} are allowed`);
  // JSON.parse keeps only the last of two equal keys: a second server would vanish silently.
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) fail(file, `server name ${JSON.stringify(twice)} is used twice in mcpServers`);
  const folder = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) || "/" : ".";
  return names.map((name): McpServerConfig => {
    if (!SERVER_NAME_PATTERN.test(name) || name.includes("__")) {
      fail(file, `server name ${JSON.stringify(name)} must match ^[A-Za-z0-9_-]{1,64}$ and must not contain "__"`);
    }
    const raw = (servers as Record<string, unknown>)[name];
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      fail(file, `mcpServers.${name} must be an object`);
    }
    const s = raw as Record<string, unknown>;
    const at = `mcpServers.${name}`;
    const protocol = s["protocol"];
    if (protocol !== undefined && protocol !== "modern" && protocol !== "legacy") {
      fail(file, `${at}.protocol must be "modern" or "legacy"`);
    }
    const type = s["type"] ?? (s["url"] !== undefined ? "http" : "stdio");
    let config: McpServerConfig;
    if (type === "sse") {
      fail(
        file,
        `${at}.type "sse" is the deprecated 2024 transport, which sprout-agent does not speak: use "http" (Streamable HTTP)`,
      );
    } else if (type === "http" || type === "streamable-http") {
      if (typeof s["url"] !== "string" || s["url"] === "") fail(file, `${at}.url must be a non-empty string`);
      const url = expandRequired(file, `${at}.url`, s["url"], options.env);
      let parsed: URL | undefined;
      try {
        parsed = new URL(url);
      } catch {
        fail(file, `${at}.url ${JSON.stringify(url)} is not a valid URL`);
      }
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
        fail(file, `${at}.url ${JSON.stringify(url)} must be an http:// or https:// URL`);
      }
      const headers = stringMap(file, `${at}.headers`, s["headers"], options.env);
      for (const [key, value] of Object.entries(headers)) {
        const problem = headerProblem(key, value);
        if (problem !== undefined) fail(file, `${at}.headers.${key} ${problem}`);
      }
      config = { name, transport: { type: "http", url, headers } };
    } else if (type === "stdio") {
      if (typeof s["command"] !== "string" || s["command"] === "") {
        fail(file, `${at}.command must be a non-empty string`);
      }
      const args = s["args"] ?? [];
      if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
        fail(file, `${at}.args must be an array of strings`);
      }
      const command = expandRequired(file, `${at}.command`, s["command"], options.env);
      if (command.trim() === "") {
        fail(file, `${at}.command ${JSON.stringify(s["command"])} expands to an empty string`);
      }
      const transport: McpServerConfig["transport"] = {
        type: "stdio",
        command,
        args: (args as string[]).map((a) => expandVars(a, options.env)),
        env: stringMap(file, `${at}.env`, s["env"], options.env),
      };
      if (s["cwd"] !== undefined) {
        if (typeof s["cwd"] !== "string") fail(file, `${at}.cwd must be a string`);
        const cwd = expandRequired(file, `${at}.cwd`, s["cwd"], options.env);
        transport.cwd = cwd.startsWith("/") ? cwd : options.resolvePath(folder, cwd);
      }
      config = { name, transport };
    } else {
      fail(file, `${at}.type ${JSON.stringify(type)} is not one of stdio, http, streamable-http`);
    }
    if (protocol !== undefined) config.protocol = protocol;
    const required = s["required"];
    if (required !== undefined && typeof required !== "boolean") fail(file, `${at}.required must be true or false`);
    if (required === true) config.required = true;
    return config;
  });
}

/**
 * Makes server names from an ACP client legal (SPEC section 5.2): other characters become
 * `_`, `__` runs are collapsed, names are cut to 64 characters and kept unique with a
 * numeric suffix. The original is kept as `displayName` when it changed.
 * @example sanitizeServerNames(["GitHub MCP", "GitHub_MCP"]) // ["GitHub_MCP", "GitHub_MCP_2"]
 */
export function sanitizeServerNames(names: readonly string[]): string[] {
  const used = new Set<string>();
  return names.map((raw) => {
    let base = raw.replace(/[^A-Za-z0-9_-]/g, "_").replace(/_{2,}/g, "_").slice(0, 60);
    if (base === "" || base === "_") base = "server";
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base}_${n}`;
    used.add(name);
    return name;
  });
}
