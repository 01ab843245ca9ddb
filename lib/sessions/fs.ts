/**
 * The few synchronous file operations the file store needs, under each runtime: Deno's own
 * (`Deno.openSync`, …) under Deno, whose `node:fs` layer costs a start about 9 ms (issue 21),
 * and `node:fs`, loaded on first use, elsewhere. Errors are the runtime's own; {@link isNotFound}
 * and {@link isExists} read them under both.
 * @module
 */

import process from "node:process";

type NodeFs = typeof import("node:fs");

// A runtime without process.getBuiltinModule (Node before 20.16) loads node:fs with this module,
// which is itself loaded only when a file store is first used.
const early: NodeFs | undefined = typeof process.getBuiltinModule === "function" ? undefined : await import("node:fs");

/** The file operations of `file-store.ts`; paths are absolute. */
export interface StoreFs {
  /** Creates `path` and its parents with `mode` (no error when it exists). */
  mkdir(path: string, mode: number): void;
  /** Appends `text` to `path`, creating it with `mode`; returns after the write reached the OS. */
  append(path: string, text: string, mode: number): void;
  /** Creates `path` with `text`; throws (see {@link isExists}) when it exists. */
  createNew(path: string, text: string, mode: number): void;
  /** The file's text (UTF-8). */
  readText(path: string): string;
  /** The first `bytes` bytes of the file, as text (a cut character is replaced). */
  readHead(path: string, bytes: number): string;
  /** The names in a folder. */
  list(path: string): string[];
  /** Size in bytes and last modification time in ms. */
  stat(path: string): { bytes: number; modifiedMs: number };
  remove(path: string): void;
  chmod(path: string, mode: number): void;
}

interface DenoFile {
  writeSync(data: Uint8Array): number;
  readSync(buffer: Uint8Array): number | null;
  close(): void;
}
interface DenoFsApi {
  mkdirSync(path: string, options: { recursive: boolean; mode: number }): void;
  openSync(
    path: string,
    options: {
      read?: boolean;
      append?: boolean;
      write?: boolean;
      create?: boolean;
      createNew?: boolean;
      mode?: number;
    },
  ): DenoFile;
  readTextFileSync(path: string): string;
  readDirSync(path: string): Iterable<{ name: string }>;
  statSync(path: string): { size: number; mtime: Date | null };
  removeSync(path: string): void;
  chmodSync(path: string, mode: number): void;
  build: { os: string };
}

/** The runtime's {@link StoreFs}. */
export function storeFs(): StoreFs {
  const deno = (globalThis as { Deno?: DenoFsApi }).Deno;
  return deno === undefined ? nodeStoreFs() : denoStoreFs(deno);
}

function writeAll(file: DenoFile, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) offset += file.writeSync(data.subarray(offset));
}

function denoStoreFs(deno: DenoFsApi): StoreFs {
  const encoder = new TextEncoder();
  const posix = deno.build.os !== "windows";
  return {
    mkdir: (path, mode) => deno.mkdirSync(path, { recursive: true, mode }),
    append(path, text, mode) {
      const file = deno.openSync(path, { append: true, create: true, mode });
      try {
        writeAll(file, encoder.encode(text));
      } finally {
        file.close();
      }
    },
    createNew(path, text, mode) {
      const file = deno.openSync(path, { write: true, createNew: true, mode });
      try {
        writeAll(file, encoder.encode(text));
      } finally {
        file.close();
      }
    },
    readText: (path) => deno.readTextFileSync(path),
    readHead(path, bytes) {
      const file = deno.openSync(path, { read: true });
      try {
        const buffer = new Uint8Array(bytes);
        let filled = 0;
        while (filled < bytes) {
          const n = file.readSync(buffer.subarray(filled));
          if (n === null || n === 0) break;
          filled += n;
        }
        return new TextDecoder().decode(buffer.subarray(0, filled));
      } finally {
        file.close();
      }
    },
    list: (path) => [...deno.readDirSync(path)].map((e) => e.name),
    stat(path) {
      const s = deno.statSync(path);
      return { bytes: s.size, modifiedMs: s.mtime?.getTime() ?? 0 };
    },
    remove: (path) => deno.removeSync(path),
    chmod: (path, mode) => {
      if (posix) deno.chmodSync(path, mode);
    },
  };
}

function nodeStoreFs(): StoreFs {
  const fs = early ?? process.getBuiltinModule("node:fs");
  return {
    mkdir: (path, mode) => void fs.mkdirSync(path, { recursive: true, mode }),
    append: (path, text, mode) => fs.appendFileSync(path, text, { mode }),
    createNew: (path, text, mode) => fs.writeFileSync(path, text, { mode, flag: "wx" }),
    readText: (path) => fs.readFileSync(path, "utf8"),
    readHead(path, bytes) {
      const fd = fs.openSync(path, "r");
      try {
        const buffer = Buffer.alloc(bytes);
        const n = fs.readSync(fd, buffer, 0, bytes, 0);
        return buffer.subarray(0, n).toString("utf8");
      } finally {
        fs.closeSync(fd);
      }
    },
    list: (path) => fs.readdirSync(path),
    stat(path) {
      const s = fs.statSync(path);
      return { bytes: s.size, modifiedMs: s.mtimeMs };
    },
    remove: (path) => fs.rmSync(path, { force: true }),
    chmod: (path, mode) => {
      if (process.platform !== "win32") fs.chmodSync(path, mode);
    },
  };
}

/** True for a "no such file" error of either runtime. */
export function isNotFound(error: unknown): boolean {
  const e = error as { code?: string; name?: string };
  return e?.code === "ENOENT" || e?.name === "NotFound";
}

/** True for a "file exists" error of either runtime. */
export function isExists(error: unknown): boolean {
  const e = error as { code?: string; name?: string };
  return e?.code === "EEXIST" || e?.name === "AlreadyExists";
}
