/**
 * Which files make up the project, and a fingerprint of them (paths, sizes, modification
 * times) that changes whenever any of them is edited, added or removed. The gate trusts a test
 * result only for the fingerprint it was measured on.
 * @module
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";

/** Folders never walked when the project is not a git work tree. */
const SKIPPED_DIRS = new Set(["node_modules", ".git"]);

/** Most files listed; beyond this the rest are ignored (a safety bound, not a feature). */
export const MAX_FILES = 100_000;

/**
 * The project's files, relative to `cwd`: `git ls-files -co --exclude-standard` (tracked plus
 * untracked files that are not ignored) inside a git work tree, else every file under `cwd`
 * outside `node_modules` and `.git` folders.
 */
export async function listProjectFiles(cwd: string): Promise<string[]> {
  const fromGit = await gitFiles(cwd);
  return fromGit ?? (await walk(cwd));
}

function gitFiles(cwd: string): Promise<string[] | undefined> {
  return new Promise((resolve) => {
    execFile(
      "git",
      ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
      { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 10_000 },
      (error, stdout) => {
        // Not a work tree, or no git at all: the caller walks the folder instead.
        if (error !== null) return resolve(undefined);
        resolve(
          stdout
            .split("\0")
            .filter((name) => name !== "")
            .slice(0, MAX_FILES),
        );
      },
    );
  });
}

async function walk(root: string): Promise<string[]> {
  const files: string[] = [];
  const pending = [""];
  while (pending.length > 0 && files.length < MAX_FILES) {
    const dir = pending.pop() ?? "";
    let entries;
    try {
      entries = await readdir(join(root, dir), { withFileTypes: true });
    } catch {
      continue; // vanished or unreadable: it simply is not part of the fingerprint
    }
    for (const entry of entries) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) pending.push(path);
      } else if (entry.isFile() || entry.isSymbolicLink()) {
        files.push(path);
      }
    }
  }
  return files.slice(0, MAX_FILES);
}

/**
 * A hash of every file's path, size and modification time (a removed file counts as
 * `missing`). Equal fingerprints mean "as far as we can tell, the same files".
 * @param files Paths relative to `cwd`, as {@link listProjectFiles} returns them.
 */
export async function fingerprintFiles(cwd: string, files: readonly string[]): Promise<string> {
  const sorted = [...files].sort();
  const lines: string[] = new Array(sorted.length);
  const BATCH = 256; // bounded parallelism: fast, without exhausting file descriptors
  for (let start = 0; start < sorted.length; start += BATCH) {
    await Promise.all(
      sorted.slice(start, start + BATCH).map(async (path, offset) => {
        try {
          const info = await stat(join(cwd, path));
          lines[start + offset] = `${path}\t${info.size}\t${info.mtimeMs}`;
        } catch {
          lines[start + offset] = `${path}\tmissing`;
        }
      }),
    );
  }
  return createHash("sha256").update(lines.join("\n")).digest("hex");
}
