/**
 * Which protocol era a server speaks and the handshake of each (SPEC section 10): the era
 * cache, the modern `_meta` envelope, the `server/discover` probe with the official v2
 * client's `versionNegotiation: {mode: 'auto'}` wire behaviour (one corrective retry on
 * -32022; the first answer decides, however long it takes within the init timeout; a stdio
 * server that exits on the probe is restarted and spoken to in legacy; an HTTP server's
 * first answer decides by its status), and the legacy `initialize` request.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { traceMeta } from "../util/trace.ts";
import { PROTOCOL_VERSION_META_KEY } from "./http.ts";
import { HEADER_MISMATCH, JsonRpcError, UNSUPPORTED_PROTOCOL_VERSION } from "./jsonrpc.ts";
import type { JsonRpcPeer } from "./jsonrpc.ts";
import { AGENT_NAME, VERSION } from "../util/version.ts";
import { LEGACY_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION } from "./types.ts";
import type { McpEra, McpServerConfig } from "./types.ts";
import { asObject } from "../util/json.ts";

/** Client info sent when `options.clientInfo` is absent. */
export const DEFAULT_CLIENT_INFO: { name: string; version: string } = { name: AGENT_NAME, version: VERSION };

const CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities";
const SESSION_META_KEY = "sprout-agent/session";
/** Modern revisions this client speaks. */
const MODERN_VERSIONS: readonly string[] = [MODERN_PROTOCOL_VERSION];

/** The key under which `options.eraCache` remembers a server's era. */
export function eraCacheKey(config: McpServerConfig): string {
  return JSON.stringify(config.transport);
}

/**
 * The era to use without detecting it: `config.protocol` when pinned, else the one `eraCache`
 * remembers for this configuration, else `undefined` (detect). SPEC section 10.
 */
export function knownEra(config: McpServerConfig, eraCache: Map<string, McpEra> | undefined): McpEra | undefined {
  return config.protocol ?? eraCache?.get(eraCacheKey(config));
}

/** Remembers a detected era in `eraCache` (if any) for the life of the process. */
export function rememberEra(config: McpServerConfig, eraCache: Map<string, McpEra> | undefined, era: McpEra): void {
  eraCache?.set(eraCacheKey(config), era);
}

/** What goes into the `_meta` of a request (see {@link requestMeta}). */
export interface RequestMetaOptions {
  /** Sent as `sprout-agent/session`. */
  sessionId: string;
  /** The modern revision in use; `undefined` in the legacy era (no envelope). */
  version: string | undefined;
  /** Sent as `io.modelcontextprotocol/clientInfo`; default {@link DEFAULT_CLIENT_INFO}. */
  clientInfo?: { name: string; version: string } | undefined;
  /** Per-request entries (for example `sprout-agent/hook`). */
  extra?: Record<string, unknown> | undefined;
  /** Sent as `io.modelcontextprotocol/clientCapabilities` (modern); default `{}`. */
  capabilities?: Record<string, unknown> | undefined;
}

/**
 * The `_meta` of every request: the session id, `traceparent`/`tracestate` of the current span
 * (when there is one), per-request entries and, in the modern era,
 * the envelope (protocol version, client info, client capabilities). SPEC section 10.
 */
export function requestMeta(options: RequestMetaOptions): Record<string, unknown> {
  // W3C trace context of the span the request is sent in (SEP-414, lib/util/trace.ts).
  const meta: Record<string, unknown> = { [SESSION_META_KEY]: options.sessionId, ...traceMeta(), ...options.extra };
  if (options.version !== undefined) {
    meta[PROTOCOL_VERSION_META_KEY] = options.version;
    meta[CLIENT_INFO_META_KEY] = options.clientInfo ?? DEFAULT_CLIENT_INFO;
    meta[CLIENT_CAPABILITIES_META_KEY] = options.capabilities ?? {};
  }
  return meta;
}

/**
 * The outcome of {@link probeEra}: modern (with the agreed version and the `server/discover`
 * result), legacy on the same connection, or legacy after restarting the stdio child.
 */
export type Probe =
  | { kind: "modern"; version: string; result: Record<string, unknown> }
  | { kind: "legacy-here" }
  | { kind: "legacy-restart" };

/** What {@link probeEra} needs from the connection. */
export interface ProbeOptions {
  /** The server's name, for errors. */
  name: string;
  /** When the whole handshake must be done (`Date.now()` ms). */
  deadline: number;
  /** Detecting rather than pinned: a stdio server that exits on the probe means legacy (after a restart). */
  fallback: boolean;
  /** The server is a stdio child. */
  stdio: boolean;
  /** Whether the stdio child still runs (true when there is none). */
  alive: () => boolean;
  /** The `_meta` of the probe for a modern revision. */
  meta: (version: string) => Record<string, unknown>;
  /** The message of a timeout (the init timeout, with the stderr tail). */
  timeoutMessage: () => string;
  /**
   * Sends the nudge of {@link probeEra} (a stdio server being detected); called with the
   * version being probed, {@link NUDGE_DELAYS_MS} after the probe while it is unanswered.
   */
  nudge?: ((version: string) => void) | undefined;
}

/**
 * When a stdio server that has not answered the probe is nudged, in ms after the probe
 * (SPEC section 10): a notification no server answers or acts on, after which the legacy
 * servers that stay silent on the probe show what they are. The Python SDK `mcp`
 * 1.0.0–1.9.3 (FastMCP 2.0–2.8) lost its session on the probe and exits on the next line
 * it reads; the Swift SDK in strict mode answers a notification before `initialize` with an
 * error. A modern server that is merely slow reads the nudge after the probe and ignores it.
 */
export const NUDGE_DELAYS_MS: readonly number[] = [1000, 3000, 7000, 15000];

/** The `requestId` of the nudge's `notifications/cancelled`: never the id of a request. */
export const NUDGE_REQUEST_ID = "sprout-agent/era-probe-nudge";

/** What the nudge sends: `notifications/cancelled` for no request, with the modern envelope. */
export function nudgeParams(meta: Record<string, unknown>): Record<string, unknown> {
  return { requestId: NUDGE_REQUEST_ID, reason: "era probe", _meta: meta };
}

/**
 * One `server/discover` exchange (plus one corrective retry on -32022), classified from the
 * server's first answer, which it may take until `deadline` (the init timeout) to give: a
 * slow server is never killed for being slow (the Python SDK and FastMCP take 1.3–3.3 s to
 * answer their first request), and the official v2 SDK's `serveStdio` pins the era of its
 * connection from the opening exchange, so no request is sent before the answer; only the
 * nudges ({@link NUDGE_DELAYS_MS}), notifications in the modern envelope, which `serveStdio`
 * hands to the instance the probe opened. A stray JSON-RPC error while the probe is alone
 * (`id` null, `""`, or one never sent: a server that could not read the probe, or refused
 * the nudge) is a legacy answer at once; -32020 (header mismatch) is a modern server
 * refusing our headers, never a reason to fall back.
 * @throws {AgentError} `mcp-connect` when there is no common version, on a header mismatch or
 *   when the server stays silent past the deadline; the HTTP error of a 401, 403 or 5xx
 *   answer; other failures
 */
export async function probeEra(peer: JsonRpcPeer, options: ProbeOptions): Promise<Probe> {
  const { name, deadline, fallback, stdio } = options;
  let version = MODERN_PROTOCOL_VERSION;
  for (let corrective = 0;; corrective++) {
    const nudging = startNudges(options.nudge, version);
    try {
      const result = await peer.request("server/discover", { _meta: options.meta(version) }, {
        timeoutMs: remainingMs(deadline),
        timeoutMessage: options.timeoutMessage,
        takesStrayError: true,
      }).finally(nudging);
      const discover = asObject(result);
      const supported = discover?.supportedVersions;
      if (discover && Array.isArray(supported) && supported.includes(version)) {
        return { kind: "modern", version, result: discover };
      }
      return { kind: "legacy-here" };
    } catch (error) {
      if (error instanceof JsonRpcError) {
        if (error.status === 401 || error.status === 403) throw error;
        if (error.rpcCode === HEADER_MISMATCH) {
          throw new AgentError(
            "mcp-connect",
            `Cannot connect to server "${name}": it refused the request's headers (header mismatch, code ${HEADER_MISMATCH}): ${error.rpcMessage}`,
            { cause: error },
          );
        }
        if (error.rpcCode === UNSUPPORTED_PROTOCOL_VERSION) {
          const list = asObject(error.rpcData)?.supported;
          const supported = Array.isArray(list) ? list.filter((v): v is string => typeof v === "string") : [];
          const mutual = MODERN_VERSIONS.find((v) => supported.includes(v) && v !== version);
          if (mutual !== undefined && corrective === 0) {
            version = mutual;
            continue;
          }
          if (
            supported.some((v) => (LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(v)) || supported.length === 0
          ) {
            return legacyAfterError(options);
          }
          throw new AgentError(
            "mcp-connect",
            `Cannot connect to server "${name}": no common protocol version (the server supports ${
              JSON.stringify(supported)
            }, the agent ${JSON.stringify([...MODERN_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS])})`,
          );
        }
        if (error.status !== undefined && error.status >= 500) throw error;
        return legacyAfterError(options);
      }
      if (error instanceof AgentError && stdio && fallback) {
        // Silence until the deadline is the init timeout; an exit means restart and speak legacy.
        if (error.code === "timeout") {
          throw new AgentError("mcp-connect", `Cannot start server "${name}": ${error.message}`);
        }
        return { kind: "legacy-restart" };
      }
      if (error instanceof AgentError && error.status !== undefined) {
        if (error.status === 401 || error.status === 403 || error.status >= 500) throw error;
        return { kind: "legacy-here" };
      }
      throw error;
    }
  }
}

/** Schedules the nudges of one probe; the function returned stops them. */
function startNudges(nudge: ((version: string) => void) | undefined, version: string): () => void {
  if (nudge === undefined) return () => {};
  const timers = NUDGE_DELAYS_MS.map((ms) => setTimeout(() => nudge(version), ms));
  return () => timers.forEach(clearTimeout);
}

function legacyAfterError(options: ProbeOptions): Probe {
  if (options.stdio && !options.alive()) return { kind: "legacy-restart" };
  return { kind: "legacy-here" };
}

/** What a modern server tells in its `server/discover` result. */
export interface DiscoveredServer {
  /** It advertised `capabilities.tools.listChanged` (so `subscriptions/listen` is worth opening). */
  listChanged: boolean;
  /** Its `serverInfo` (or the `_meta` one), when it has a name. */
  serverInfo: { name: string; version: string } | undefined;
}

/** Reads the capabilities and server info of a `server/discover` result. */
export function readDiscover(result: Record<string, unknown>): DiscoveredServer {
  const info = asObject(result.serverInfo) ?? asObject(asObject(result._meta)?.["io.modelcontextprotocol/serverInfo"]);
  return {
    listChanged: asObject(asObject(result.capabilities)?.tools)?.listChanged === true,
    serverInfo: serverInfoOf(info),
  };
}

/** What {@link initializeLegacy} needs. */
export interface InitializeOptions {
  /** The server's name, for errors. */
  name: string;
  /** Sent as `clientInfo`; default {@link DEFAULT_CLIENT_INFO}. */
  clientInfo: { name: string; version: string } | undefined;
  /** The request's `_meta`. */
  meta: Record<string, unknown>;
  /** Sent as `capabilities` (what the client can answer, `lib/mcp/input-requests.ts`); default `{}`. */
  capabilities?: Record<string, unknown> | undefined;
  /** How long the server may take to answer, in ms. */
  timeoutMs: number;
  /** The message of a timeout. */
  timeoutMessage: () => string;
}

/**
 * The legacy `initialize` request (the caller sends `notifications/initialized` after it).
 * Resolves with the revision the server answered and its `serverInfo`, when named.
 * @throws {AgentError} `mcp-connect` when the server answers an unsupported revision; the
 *   request's own failures (`timeout`, `mcp`)
 */
export async function initializeLegacy(
  peer: JsonRpcPeer,
  options: InitializeOptions,
): Promise<{ version: string; serverInfo: { name: string; version: string } | undefined }> {
  const result = asObject(
    await peer.request("initialize", {
      protocolVersion: LEGACY_PROTOCOL_VERSION,
      capabilities: options.capabilities ?? {},
      clientInfo: options.clientInfo ?? DEFAULT_CLIENT_INFO,
      _meta: options.meta,
    }, { timeoutMs: options.timeoutMs, timeoutMessage: options.timeoutMessage }),
  );
  const version = result?.protocolVersion;
  if (typeof version !== "string" || !(LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
    throw new AgentError(
      "mcp-connect",
      `Cannot connect to server "${options.name}": it answered initialize with unsupported protocol version ${
        JSON.stringify(version)
      }`,
    );
  }
  return { version, serverInfo: serverInfoOf(asObject(result?.serverInfo)) };
}

/**
 * A request's result as usable data: modern results carry `resultType`, and only `complete`
 * (or none, legacy) is usable here; `resultType` is removed. (`tools/call` first goes through
 * its `input_required` rounds and its task, `connection.ts`.)
 * @throws {AgentError} `mcp` when the result is not an object or is of another type
 */
export function decodeResult(result: unknown, request: { name: string; method: string }): Record<string, unknown> {
  const object = asObject(result);
  const failed = `Request "${request.method}" to server "${request.name}" failed`;
  if (!object) throw new AgentError("mcp", `${failed}: the result is not an object`);
  const type = object.resultType;
  if (type === undefined) return object;
  if (type === "complete") {
    const copy = { ...object };
    delete copy.resultType;
    return copy;
  }
  throw new AgentError(
    "mcp",
    `${failed}: result type "${String(type)}" is not supported for this request`,
  );
}

/** Time left until `deadline` (`Date.now()` ms), at least 1 ms. */
export function remainingMs(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

function serverInfoOf(info: Record<string, unknown> | undefined): { name: string; version: string } | undefined {
  if (!info || typeof info.name !== "string") return undefined;
  return { name: info.name, version: typeof info.version === "string" ? info.version : "" };
}
