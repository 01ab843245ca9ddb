/**
 * Environment variables as the agent reads them: the {@link Env} shape and `${VAR}`
 * expansion, used by `.mcp.json` (`mcp/config.ts`) and by scripted-model files
 * (`llm/scripted.ts`). Imports nothing, so both layers can use it.
 * @module
 */

/**
 * An environment as `process.env` holds it: variable name → value, `undefined` when unset.
 * Read by `loadConfig` and, for `${VAR}` expansion, by `parseMcpConfig` and {@link expandVars}.
 */
export type Env = Record<string, string | undefined>;

/**
 * Expands `${VAR}` and `${VAR:-default}` from `env`. An unset `${VAR}` becomes the empty
 * string; the default applies when the variable is unset or empty. `$VAR` without braces
 * and names that are not `[A-Za-z_][A-Za-z0-9_]*` are left as they are.
 * @example expandVars("Bearer ${TOKEN:-none}", {}) // "Bearer none"
 */
export function expandVars(text: string, env: Env): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
    const value = env[name];
    return value !== undefined && value !== "" ? value : fallback ?? "";
  });
}

/**
 * The variables `text` references as `${NAME}`, without a default, that are unset or empty
 * in `env`: what {@link expandVars} would replace with nothing. Each name once, in order of
 * appearance. `${NAME:-default}`, even `${NAME:-}`, is never listed.
 * @example unsetVars("http://${HOST}:${PORT:-80}/${HOST}", {}) // ["HOST"]
 */
export function unsetVars(text: string, env: Env): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}/g)) {
    const name = m[1]!;
    if (m[2] === undefined && (env[name] ?? "") === "" && !names.includes(name)) names.push(name);
  }
  return names;
}
