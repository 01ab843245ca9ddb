/**
 * Where agent files are (SPEC section 13.2), apart from reading them (`files.ts`), so that a
 * run can see there are none without loading the reader (issue 21).
 * @module
 */

/** `parts` joined by `/`, trailing separators of each dropped: without `node:path`, which a start need not load. */
function join(...parts: string[]): string {
  return parts.map((p, i) => (i === parts.length - 1 ? p : p.replace(/[\\/]+$/, ""))).join("/");
}

/** The project's folder of agent files, relative to the working folder. */
export const PROJECT_AGENTS_DIR = ".sprout-agent/agents";

/** Options of `loadSubagentFiles` (`files.ts`) and of {@link subagentFolders}. */
export interface LoadSubagentFilesOptions {
  /** The project folder (the agent's working folder), absolute. */
  cwd: string;
  /** For `XDG_CONFIG_HOME` and `HOME`; the user's folder is skipped when neither is set. */
  env: Record<string, string | undefined>;
}

/**
 * The two folders, project first: `<cwd>/.sprout-agent/agents` and
 * `$XDG_CONFIG_HOME/sprout-agent/agents` (or `$HOME/.config/sprout-agent/agents`).
 * @example subagentFolders({ cwd: "/p", env: { HOME: "/home/me" } })
 * // ["/p/.sprout-agent/agents", "/home/me/.config/sprout-agent/agents"]
 */
export function subagentFolders(options: LoadSubagentFilesOptions): string[] {
  const config = options.env["XDG_CONFIG_HOME"]?.trim() ||
    (options.env["HOME"]?.trim() ? join(options.env["HOME"]!.trim(), ".config") : "");
  return [join(options.cwd, PROJECT_AGENTS_DIR), ...(config === "" ? [] : [join(config, "sprout-agent", "agents")])];
}
