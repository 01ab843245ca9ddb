/**
 * The CLI's MCP configuration: `--mcp-config FILE` or `./.mcp.json`, read and parsed with
 * paths resolved against the file and `${VAR}` expanded from the environment.
 * @module
 */

import { resolve } from "node:path";
import process from "node:process";
import { parseMcpConfig } from "../mcp/config.ts";
import type { McpServerConfig } from "../mcp/types.ts";
import { AgentError } from "../util/errors.ts";
import { referencedSecrets } from "../util/redact.ts";
import { exists, readText } from "./files.ts";

/**
 * The servers of `path` (default `./.mcp.json` when it exists, else none) and the values of
 * the credential variables the file references (`referencedSecrets`), to redact. Throws
 * `AgentError("config")` when the file cannot be read or is invalid.
 */
export function loadServers(path: string | undefined): { servers: McpServerConfig[]; referenced: string[] } {
  const file = path ?? (exists(".mcp.json") ? ".mcp.json" : undefined);
  if (file === undefined) return { servers: [], referenced: [] };
  let text: string;
  try {
    text = readText(file);
  } catch (error) {
    throw new AgentError(
      "config",
      `Cannot read MCP configuration ${JSON.stringify(file)}: ${(error as Error).message}`,
    );
  }
  const referenced = referencedSecrets(text, process.env);
  const servers = parseMcpConfig(text, resolve(file), {
    env: process.env,
    resolvePath: (base, rel) => resolve(base, rel),
  });
  return { servers, referenced };
}
