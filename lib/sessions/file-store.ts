/**
 * The default session store (SPEC section 12.1): one append-only JSON Lines file per session,
 * `<folder>/<id>.jsonl`, readable by its owner only, beside a lock file `<id>.lock` while a
 * process writes it. The list is the folder's `.jsonl` files, each described by its own first
 * records: there is no index to lose.
 * @module
 */

import process from "node:process";
import { AgentError } from "../util/errors.ts";
import { isExists, isNotFound, type StoreFs, storeFs } from "./fs.ts";
import {
  describeSession,
  parseRecords,
  recordLine,
  SESSION_ID_PATTERN,
  type SessionInfo,
  type SessionRead,
  type SessionRecord,
  type SessionStore,
  type SessionWriter,
} from "./records.ts";

/** Transcript and lock files: the owner reads and writes, nobody else. */
const FILE_MODE = 0o600;
/** The folder: the owner only. */
const FOLDER_MODE = 0o700;
/** An unreadable lock younger than this (ms) is a claim in progress, not a stale lock. */
const FRESH_LOCK_MS = 5000;
/** How much of a transcript a list reads first to find its `session` record, in bytes. */
const HEAD_BYTES = 64 * 1024;

/**
 * The folder transcripts go to when none is chosen: `$XDG_STATE_HOME/sprout-agent/sessions`,
 * else on Windows `%LOCALAPPDATA%\sprout-agent\sessions`, else
 * `$HOME/.local/state/sprout-agent/sessions` (the XDG default). Relative values are ignored, as
 * the XDG specification asks.
 * @returns the folder, or `undefined` when the environment names no home at all
 * @example defaultSessionDir({ HOME: "/home/me" }) // "/home/me/.local/state/sprout-agent/sessions"
 */
export function defaultSessionDir(
  env: Record<string, string | undefined> = process.env,
  platform: string = process.platform,
): string | undefined {
  const sep = platform === "win32" ? "\\" : "/";
  const absolute = (p: string | undefined) =>
    p !== undefined && p !== "" && (p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p) || p.startsWith("\\\\"));
  const under = (base: string, ...parts: string[]) => [base.replace(/[\\/]+$/, ""), ...parts].join(sep);
  if (absolute(env["XDG_STATE_HOME"])) return under(env["XDG_STATE_HOME"]!, "sprout-agent", "sessions");
  if (platform === "win32" && absolute(env["LOCALAPPDATA"])) {
    return under(env["LOCALAPPDATA"]!, "sprout-agent", "sessions");
  }
  const home = platform === "win32" ? env["USERPROFILE"] ?? env["HOME"] : env["HOME"];
  if (absolute(home)) return under(home!, ".local", "state", "sprout-agent", "sessions");
  return undefined;
}

/** Options of {@link fileSessionStore}. */
export interface FileSessionStoreOptions {
  /** The folder, absolute; created (mode 0700) on the first write. Default {@link defaultSessionDir}. */
  dir?: string;
  /** This machine's name in lock files; default the OS's host name (`os.hostname()`). */
  host?: string;
}

/**
 * The file store: `<dir>/<id>.jsonl` per session (mode 0600), `<dir>/<id>.lock` while claimed.
 * A lock whose process is gone (same host, pid not running) is taken over; one held by a
 * running process refuses the claim.
 * @throws {AgentError} `config` when no `dir` is given and the environment names no home
 * @example
 * const store = fileSessionStore({ dir: "/tmp/sessions" });
 * const { sessions } = await store.list();
 */
export function fileSessionStore(options: FileSessionStoreOptions = {}): SessionStore {
  const dir = options.dir ?? defaultSessionDir();
  if (dir === undefined) {
    throw new AgentError(
      "config",
      "Cannot find a folder for session transcripts: set XDG_STATE_HOME or HOME, or choose one with SPROUT_AGENT_SESSION_DIR",
    );
  }
  return new FileStore(dir, options.host ?? hostName());
}

interface LockInfo {
  pid: number;
  host: string;
  at: string;
}

class FileStore implements SessionStore {
  readonly location: string;
  readonly #host: string;
  #fs: StoreFs | undefined;

  constructor(dir: string, host: string) {
    this.location = dir;
    this.#host = host;
  }

  get #files(): StoreFs {
    return this.#fs ??= storeFs();
  }

  #path(id: string, ext: "jsonl" | "lock"): string {
    return `${this.location}/${id}.${ext}`;
  }

  claim(id: string, options: { existing: boolean }): Promise<SessionWriter> {
    try {
      return Promise.resolve(this.#claim(id, options));
    } catch (error) {
      return Promise.reject(this.#storageError(error));
    }
  }

  /**
   * A file-system failure (the folder is a file, no permission, a transcript that is a folder)
   * as an `AgentError` `config` naming the folder: the CLI's one-line error with exit 2, and
   * for a new session a warning (SPEC 12.1). The store's own refusals pass through.
   */
  #storageError(error: unknown): unknown {
    if (error instanceof AgentError) return error;
    return new AgentError(
      "config",
      `Cannot use the sessions folder ${this.location} (SPROUT_AGENT_SESSION_DIR): ${
        (error as Error)?.message ?? String(error)
      }`,
    );
  }

  #claim(id: string, { existing }: { existing: boolean }): SessionWriter {
    checkId(id);
    const fs = this.#files;
    const transcript = this.#path(id, "jsonl");
    const present = exists(fs, transcript);
    if (existing && !present) {
      throw new AgentError("session", `No session ${JSON.stringify(id)} in ${this.location}`);
    }
    if (!existing && present) {
      throw new AgentError(
        "session",
        `Session ${JSON.stringify(id)} already has a transcript in ${this.location}: resume it, or choose another id`,
      );
    }
    fs.mkdir(this.location, FOLDER_MODE);
    const lock = this.#path(id, "lock");
    const mine: LockInfo = { pid: process.pid, host: this.#host, at: new Date().toISOString() };
    const text = `${JSON.stringify(mine)}\n`;
    try {
      fs.createNew(lock, text, FILE_MODE);
    } catch (error) {
      if (!isExists(error)) throw error;
      const holder = readLock(fs, lock);
      // A lock without its content yet is another claim under way, unless it is old.
      if (holder === undefined && Date.now() - lockAge(fs, lock) < FRESH_LOCK_MS) {
        throw new AgentError("session", `Session ${JSON.stringify(id)} is being claimed by another process (${lock})`);
      }
      if (holder !== undefined && (holder.host !== this.#host || alive(holder.pid))) {
        throw new AgentError(
          "session",
          `Session ${
            JSON.stringify(id)
          } is in use by process ${holder.pid} on ${holder.host} since ${holder.at} (${lock}): ` +
            "end that process first, or remove the lock file if it is gone",
        );
      }
      // The holder is gone (or the lock is unreadable): take it over, one process at a time.
      this.#takeOver(id, lock, text);
    }
    return new FileWriter(fs, transcript, lock, text);
  }

  /**
   * Replaces a stale lock with ours. Two processes that both judged it stale must not both
   * win: the takeover itself is claimed by `<id>.lock.takeover` (created exclusively), the
   * lock is read again under it, and any "file exists" is a refusal.
   */
  #takeOver(id: string, lock: string, text: string): void {
    const fs = this.#files;
    const guard = `${lock}.takeover`;
    const busy = () =>
      new AgentError("session", `Session ${JSON.stringify(id)} is being claimed by another process (${lock})`);
    try {
      fs.createNew(guard, text, FILE_MODE);
    } catch (error) {
      if (!isExists(error)) throw error;
      // A takeover left by a process that died in it (older than a fresh claim) is removed; retry later.
      if (Date.now() - lockAge(fs, guard) >= FRESH_LOCK_MS) fs.remove(guard);
      throw busy();
    }
    try {
      const holder = readLock(fs, lock);
      if (holder !== undefined && (holder.host !== this.#host || alive(holder.pid))) throw busy();
      fs.remove(lock);
      try {
        fs.createNew(lock, text, FILE_MODE);
      } catch (error) {
        if (isExists(error)) throw busy();
        throw error;
      }
    } finally {
      fs.remove(guard);
    }
  }

  read(id: string): Promise<SessionRead | undefined> {
    try {
      checkId(id);
      const text = this.#files.readText(this.#path(id, "jsonl"));
      return Promise.resolve(parseRecords(text, `session ${JSON.stringify(id)}`));
    } catch (error) {
      if (isNotFound(error)) return Promise.resolve(undefined);
      return Promise.reject(this.#storageError(error));
    }
  }

  list(options: { cwd?: string } = {}): Promise<{ sessions: SessionInfo[]; warnings: string[] }> {
    const fs = this.#files;
    let names: string[];
    try {
      names = fs.list(this.location);
    } catch (error) {
      if (isNotFound(error)) return Promise.resolve({ sessions: [], warnings: [] });
      return Promise.reject(this.#storageError(error));
    }
    const sessions: SessionInfo[] = [];
    const warnings: string[] = [];
    for (const name of names) {
      if (!name.endsWith(".jsonl")) continue;
      const id = name.slice(0, -".jsonl".length);
      if (!SESSION_ID_PATTERN.test(id)) continue;
      const path = `${this.location}/${name}`;
      try {
        const stat = fs.stat(path);
        const file = { updated: new Date(stat.modifiedMs).toISOString(), bytes: stat.bytes };
        let head = fs.readHead(path, HEAD_BYTES);
        // Only whole lines of a cut head: its last line is the cut, not damage.
        if (stat.bytes > HEAD_BYTES) head = head.slice(0, head.lastIndexOf("\n") + 1);
        let read = parseRecords(head, `session ${JSON.stringify(id)}`);
        if (stat.bytes > HEAD_BYTES && !read.records.some((r) => r.type === "session")) {
          read = parseRecords(fs.readText(path), `session ${JSON.stringify(id)}`);
        }
        sessions.push(describeSession(id, read, file));
      } catch (error) {
        const problem = `cannot be read: ${(error as Error).message}`;
        warnings.push(`session ${JSON.stringify(id)} ${problem}`);
        sessions.push({ id, cwd: "", title: "", created: "", updated: "", bytes: 0, problem });
      }
    }
    const kept = options.cwd === undefined ? sessions : sessions.filter((s) => s.cwd === options.cwd);
    kept.sort((a, b) => (a.updated < b.updated ? 1 : a.updated > b.updated ? -1 : a.id < b.id ? -1 : 1));
    return Promise.resolve({ sessions: kept, warnings });
  }
}

class FileWriter implements SessionWriter {
  readonly #fs: StoreFs;
  readonly #transcript: string;
  readonly #lock: string;
  readonly #lockText: string;
  #closed = false;
  #created = false;

  constructor(fs: StoreFs, transcript: string, lock: string, lockText: string) {
    this.#fs = fs;
    this.#transcript = transcript;
    this.#lock = lock;
    this.#lockText = lockText;
  }

  append(records: readonly SessionRecord[]): Promise<void> {
    if (this.#closed) return Promise.reject(new AgentError("session", "Cannot write the transcript: it is closed"));
    if (records.length === 0) return Promise.resolve();
    try {
      let text = records.map(recordLine).join("");
      if (!this.#created) {
        // A line cut short by a kill stays its own damaged line: what follows starts a new one.
        const before = existingText(this.#fs, this.#transcript);
        if (before !== "" && !before.endsWith("\n")) text = `\n${text}`;
      }
      this.#fs.append(this.#transcript, text, FILE_MODE);
      if (!this.#created) {
        // A file made under another umask, or by an older version, becomes the owner's only.
        this.#created = true;
        this.#fs.chmod(this.#transcript, FILE_MODE);
      }
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    try {
      // Only our own lock: a process that took over a lock it thought stale keeps its own.
      if (this.#fs.readText(this.#lock) === this.#lockText) this.#fs.remove(this.#lock);
    } catch {
      // Already gone.
    }
    return Promise.resolve();
  }
}

/** This machine's name for lock files: the OS's (`os.hostname()`), else `$HOSTNAME`, else `localhost`. */
function hostName(): string {
  try {
    const name = process.getBuiltinModule?.("node:os")?.hostname();
    if (typeof name === "string" && name !== "") return name;
  } catch {
    // Deno without --allow-sys: fall back to the environment.
  }
  return process.env["HOSTNAME"] || "localhost";
}

function checkId(id: string): void {
  if (typeof id !== "string" || !SESSION_ID_PATTERN.test(id)) {
    throw new AgentError(
      "session",
      `Invalid session id ${JSON.stringify(id)}: 1 to 128 letters, digits, _, - or . (not starting with .)`,
    );
  }
}

/** The file's text, `""` when it does not exist. */
function existingText(fs: StoreFs, path: string): string {
  try {
    return fs.readText(path);
  } catch (error) {
    if (isNotFound(error)) return "";
    throw error;
  }
}

function exists(fs: StoreFs, path: string): boolean {
  try {
    fs.stat(path);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

function readLock(fs: StoreFs, path: string): LockInfo | undefined {
  try {
    const value = JSON.parse(fs.readText(path)) as Partial<LockInfo>;
    if (typeof value.pid !== "number" || typeof value.host !== "string") return undefined;
    return { pid: value.pid, host: value.host, at: typeof value.at === "string" ? value.at : "(unknown time)" };
  } catch {
    return undefined;
  }
}

/** The lock's modification time in ms (0 when it is gone). */
function lockAge(fs: StoreFs, path: string): number {
  try {
    return fs.stat(path).modifiedMs;
  } catch {
    return 0;
  }
}

/**
 * Whether process `pid` may run on this machine: only "no such process" (ESRCH) says it does
 * not. A process of another user (EPERM), or a runtime that may not ask (Deno without
 * `--allow-run`), counts as running, so a live writer's lock is never taken over.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code !== "ESRCH";
  }
}
