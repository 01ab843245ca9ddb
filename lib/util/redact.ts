/**
 * Keeps secrets out of every text the agent shows (issue 6, guarantee 6): API keys, the values
 * of `Authorization`/`x-api-key` headers and of the headers configured for MCP servers. Used
 * wherever an error or a warning becomes text: the LLM and MCP HTTP error messages, the CLI's
 * event printer and error line, the ACP error responses, updates and log.
 * @module
 */

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/** Secrets shorter than this are not searched for (they would mangle ordinary words). */
export const MIN_SECRET_LENGTH = 4;

/** Header names whose values are credentials wherever they appear. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|x-api-key|api-key|x-auth-token|cookie)$/i;

/** Environment variable names that hold credentials (for a stdio server's own `env`). */
const CREDENTIAL_VARIABLE = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)/i;

// `Authorization: Bearer x`, `"x-api-key":"x"`, `api_key=x`: the name stays, the value goes.
const NAMED_CREDENTIAL =
  /\b(proxy-authorization|authorization|x-api-key|api[-_]?key|x-auth-token|access[-_]?token|client[-_]?secret|password)("?\s*[:=]\s*"?)((?:bearer|basic|token)\s+)?([^\s"',;&}\]]+)/gi;
// A bearer token anywhere else.
const BEARER = /\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})/gi;
// The password of credentials written into a URL: `https://user:pass@host`.
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:)([^@/\s]+)@/gi;

/**
 * Replaces every occurrence of each secret in `text`, and every value that follows a
 * credential name (`Authorization: …`, `x-api-key: …`, `Bearer …`, a URL's password), with
 * {@link REDACTED}. Secrets shorter than {@link MIN_SECRET_LENGTH} characters are ignored.
 * @param secrets exact strings to remove (API keys, header values), longest matched first
 * @param options.patterns also redact values after credential names (default true); turn it
 *   off for text that is the model's or a tool's own output, where only known secrets go
 * @example redact("401: bad key sk-123456", ["sk-123456"]) // "401: bad key [redacted]"
 */
export function redact(
  text: string,
  secrets: Iterable<string | undefined> = [],
  options: { patterns?: boolean } = {},
): string {
  let out = text;
  const list = [
    ...new Set([...secrets].filter((s): s is string => typeof s === "string" && s.length >= MIN_SECRET_LENGTH)),
  ]
    .sort((a, b) => b.length - a.length);
  for (const secret of list) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    // The same secret as it appears inside JSON text (quotes and backslashes escaped).
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
  }
  if (options.patterns === false) return out;
  return out
    .replace(
      NAMED_CREDENTIAL,
      (_m, name: string, sep: string, scheme: string | undefined, value: string) =>
        value === REDACTED || value.startsWith("[redacted")
          ? `${name}${sep}${scheme ?? ""}${value}`
          : `${name}${sep}${scheme ?? ""}${REDACTED}`,
    )
    .replace(BEARER, (m, scheme: string, value: string) => (value.startsWith("[redacted") ? m : `${scheme}${REDACTED}`))
    .replace(URL_PASSWORD, `$1${REDACTED}@`);
}

/**
 * `value` with every string inside it (object values, array items, recursively) redacted as by
 * {@link redact}; keys, numbers and the shape are kept. For events printed as JSON.
 */
export function redactValue<T>(
  value: T,
  secrets: Iterable<string | undefined> = [],
  options: { patterns?: boolean } = {},
): T {
  const list = [...secrets];
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return redact(v, list, options);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, inner] of Object.entries(v)) out[k] = walk(inner);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}

/**
 * The secrets in a set of headers: with `all` (headers written in `.mcp.json` or sent by an ACP
 * client) every value, else only credential headers (`Authorization`, `x-api-key`…). A value
 * with a scheme (`Bearer abc`) also gives its token alone.
 */
export function headerSecrets(headers: Record<string, string> | undefined, all: boolean): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!all && !CREDENTIAL_HEADER.test(name)) continue;
    out.push(value);
    const token = /^\s*\S+\s+(\S.*?)\s*$/.exec(value)?.[1];
    if (token !== undefined) out.push(token);
  }
  return out;
}

/** The values of a server's own environment whose names say they are credentials (`*_TOKEN`, `*_KEY`…). */
export function envSecrets(env: Record<string, string> | undefined): string[] {
  return Object.entries(env ?? {}).filter(([name]) => CREDENTIAL_VARIABLE.test(name)).map(([, value]) => value);
}

/**
 * The values of the credential-named variables (`*_TOKEN`, `*_KEY`…) that a configuration text
 * references as `${NAME}` or `${NAME:-default}`: `.mcp.json` may pass a token on under another
 * name (`"env": {"GH": "${GITHUB_TOKEN}"}`, or in `args`), where {@link envSecrets} cannot see
 * by its name that it is one. Unset or empty variables give nothing.
 * @param text the configuration file's text, before expansion
 * @param env the environment it is expanded from
 * @example referencedSecrets('{"env": {"GH": "${GITHUB_TOKEN}"}}', { GITHUB_TOKEN: "ghp_x1" }) // ["ghp_x1"]
 */
export function referencedSecrets(text: string, env: Record<string, string | undefined>): string[] {
  const out: string[] = [];
  for (const [, name] of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}/g)) {
    const value = env[name!];
    if (CREDENTIAL_VARIABLE.test(name!) && value !== undefined && value !== "") out.push(value);
  }
  return out;
}

/**
 * Every secret a running agent knows of: the configured API keys and, for each MCP server, its
 * header values and credential-named environment values. Shape-compatible with `Config` and
 * `McpServerConfig` without importing them.
 */
export function configSecrets(
  config: { anthropic: { apiKey: string | undefined }; openai: { apiKey: string | undefined } },
  servers: ReadonlyArray<
    { transport: { type: string; headers?: Record<string, string>; env?: Record<string, string> } }
  > = [],
): string[] {
  const out: string[] = [];
  if (config.anthropic.apiKey !== undefined) out.push(config.anthropic.apiKey);
  if (config.openai.apiKey !== undefined) out.push(config.openai.apiKey);
  for (const s of servers) {
    out.push(...headerSecrets(s.transport.headers, true));
    out.push(...envSecrets(s.transport.env));
  }
  return out;
}

/**
 * An agent event (or any `{type}` object) with its secrets redacted: the model's text and
 * tool arguments and outputs lose only known secrets; warnings, hook messages and errors also
 * lose anything after a credential name.
 */
export function redactEvent<T extends { type: string }>(event: T, secrets: Iterable<string | undefined>): T {
  // A subagent's event (SPEC 13.6) is redacted as the child's event it wraps.
  const inner = (event as { event?: unknown }).event;
  if (event.type === "subagent" && typeof inner === "object" && inner !== null) {
    const list = [...secrets];
    const wrapped = redactValue({ ...event, event: undefined }, list, { patterns: true });
    return { ...wrapped, event: redactEvent(inner as { type: string }, list) };
  }
  const ownText = event.type === "text-delta" || event.type === "thinking-delta" || event.type === "tool-start" ||
    event.type === "tool-end";
  return redactValue(event, secrets, { patterns: !ownText });
}
