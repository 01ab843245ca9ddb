/**
 * Agent files (SPEC section 13.2): `*.md` files in the project's `.sprout-agent/agents/` and
 * the user's `$XDG_CONFIG_HOME/sprout-agent/agents/` (default `~/.config/sprout-agent/agents/`),
 * each one subagent. A project file wins over a user file of the same name. A folder that does
 * not exist is no subagent; a file that cannot be read or parsed is a warning naming it.
 * @module
 */

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type SubagentDefinition, subagentFromFile } from "./definitions.ts";
import { type LoadSubagentFilesOptions, subagentFolders } from "./folders.ts";

export { type LoadSubagentFilesOptions, PROJECT_AGENTS_DIR, subagentFolders } from "./folders.ts";

/**
 * Reads the agent files of both folders (SPEC 13.2), in name order within a folder; a project
 * file hides a user file of the same `name`. Never throws.
 * @returns the definitions and one warning per file skipped (naming the file and the field)
 * @example
 * const { definitions, warnings } = await loadSubagentFiles({ cwd: process.cwd(), env: process.env });
 */
export async function loadSubagentFiles(
  options: LoadSubagentFilesOptions,
): Promise<{ definitions: SubagentDefinition[]; warnings: string[] }> {
  const definitions: SubagentDefinition[] = [];
  const warnings: string[] = [];
  const names = new Set<string>();
  for (const folder of subagentFolders(options)) {
    let entries: string[];
    try {
      entries = (await readdir(folder)).filter((f) => f.endsWith(".md")).sort();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== "ENOENT" && code !== "ENOTDIR" && !(error instanceof Error && error.name === "NotFound")) {
        warnings.push(`Cannot read the agent folder ${JSON.stringify(folder)}: ${(error as Error).message}`);
      }
      continue;
    }
    const inFolder = new Set<string>();
    for (const entry of entries) {
      const path = join(folder, entry);
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (error) {
        warnings.push(`Skipped agent file ${JSON.stringify(path)}: ${(error as Error).message}`);
        continue;
      }
      const read = subagentFromFile(text, path);
      if (read.warning !== undefined) {
        warnings.push(read.warning);
        continue;
      }
      const name = read.definition.name;
      if (inFolder.has(name)) {
        warnings.push(
          `Skipped agent file ${JSON.stringify(path)}: field "name": ${
            JSON.stringify(name)
          } is taken by another file of ${JSON.stringify(folder)}`,
        );
        continue;
      }
      inFolder.add(name);
      if (names.has(name)) continue; // a project file of that name hides the user's
      names.add(name);
      definitions.push(read.definition);
    }
  }
  return { definitions, warnings };
}
