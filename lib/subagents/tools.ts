/**
 * What the model sees of subagents (SPEC section 13.3): one tool per subagent, named
 * `subagent_<name>` (no MCP tool's name can be one: every qualified name holds `__`, and a
 * subagent's name cannot), and the view of the parent's servers a child gets: only the tools
 * its `tools` allow, the subagent tools its depth allows, and everything else (hooks, kills,
 * closing) the parent's registry as it is.
 * @module
 */

import type { ToolDef } from "../conversation/types.ts";
import type { McpTool, ToolOutcome, ToolRegistry } from "../mcp/types.ts";
import { appliesTo } from "../hooks/runner.ts";
import { clampUtf8 } from "../util/utf8.ts";
import type { SubagentDefinition } from "./definitions.ts";

/** The prefix of every subagent's tool name. */
export const SUBAGENT_TOOL_PREFIX = "subagent_";

/** The `server` a subagent tool routes to, in `_PreToolUse`'s `toolCall` and in permission requests. */
export const SUBAGENT_SERVER = "subagent";

/** The tool name of subagent `name`. @example subagentToolName("reviewer") // "subagent_reviewer" */
export function subagentToolName(name: string): string {
  return `${SUBAGENT_TOOL_PREFIX}${name}`;
}

/** The input schema of every subagent tool: one required `task` string. */
export const SUBAGENT_INPUT_SCHEMA: Readonly<Record<string, unknown>> = {
  type: "object",
  properties: {
    task: {
      type: "string",
      description:
        "The task, with everything the subagent needs to do it: it sees nothing of this conversation, only this text.",
    },
  },
  required: ["task"],
  additionalProperties: false,
};

/** The tool the model sees for `def`: its description (cut to 1024 bytes), the {@link SUBAGENT_INPUT_SCHEMA}. */
export function subagentToolDef(def: SubagentDefinition): ToolDef {
  return {
    name: subagentToolName(def.name),
    description: clampUtf8(`Subagent "${def.name}": ${def.description}`, 1024),
    inputSchema: structuredClone(SUBAGENT_INPUT_SCHEMA) as Record<string, unknown>,
  };
}

/**
 * Whether a child whose definition says `patterns` may use the tool `name` of `server`: no
 * patterns, every tool; a pattern with no `*`, `?` or `__` names a server (all its tools);
 * any other is a glob over the qualified name.
 */
export function toolAllowed(patterns: readonly string[] | undefined, name: string, server: string): boolean {
  if (patterns === undefined) return true;
  return patterns.some((p) => (!/[*?]/.test(p) && !p.includes("__") ? p === server : appliesTo([p], name)));
}

/** Options of {@link toolView}. */
export interface ToolViewOptions {
  /** Which of the inner registry's model tools are shown (by qualified name and server). */
  allow?: (name: string, server: string) => boolean;
  /** Subagent tools to add after the servers' tools, in order. */
  subagents?: readonly SubagentDefinition[];
}

/**
 * `registry` as a session sees it with subagents: the inner model tools that `allow` keeps,
 * then one tool per subagent; `route` knows the subagent tools (server {@link SUBAGENT_SERVER},
 * so the permission policy and `_PreToolUse` apply to them), and a call to a hidden tool is
 * `unknown tool: NAME`, as for a name that was never listed (SPEC 2.2). A subagent tool's call
 * never reaches here: the loop runs it (`localTools`). Hooks, kills and `close` go to
 * `registry` unchanged.
 */
export function toolView(registry: ToolRegistry, options: ToolViewOptions): ToolRegistry {
  const allow = options.allow ?? (() => true);
  const subagents = new Map((options.subagents ?? []).map((d) => [subagentToolName(d.name), d]));
  const visible = (name: string): boolean => {
    const route = registry.route(name);
    return route !== undefined && allow(name, route.server);
  };
  return {
    async listTools() {
      const tools = (await registry.listTools()).filter((t) => visible(t.name));
      return [...tools, ...[...subagents.values()].map(subagentToolDef)];
    },
    callTool(name, args, callOptions): Promise<ToolOutcome> {
      if (subagents.has(name) || !visible(name)) {
        return Promise.resolve({ content: [{ type: "text", text: `unknown tool: ${name}` }], isError: true });
      }
      return registry.callTool(name, args, callOptions);
    },
    route(name) {
      const def = subagents.get(name);
      if (def !== undefined) {
        const tool: McpTool = { name, description: def.description, inputSchema: SUBAGENT_INPUT_SCHEMA };
        return { server: SUBAGENT_SERVER, tool };
      }
      return visible(name) ? registry.route(name) : undefined;
    },
    hookServers: (hook, o) => registry.hookServers(hook, o),
    isRequired: (server) => registry.isRequired(server),
    hookTools: () => registry.hookTools(),
    hookTool: (server, hook) => registry.hookTool(server, hook),
    callHook: (server, hook, o) => registry.callHook(server, hook, o),
    qualifiedName: (server, bare) => registry.qualifiedName(server, bare),
    killServer: (server, reason) => registry.killServer(server, reason),
    close: () => registry.close(),
  };
}
