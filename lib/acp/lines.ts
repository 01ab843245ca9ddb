/**
 * Newline-delimited framing over a byte stream with a size cap (SPEC section 11, ACP): lines
 * are cut at `\n`, a trailing `\r` is stripped, and a line longer than the cap is skipped
 * without being held in memory — its bytes are dropped as they arrive until the next `\n`.
 * @module
 */

/** What {@link readLines} reports. */
export interface LineHandlers {
  /** One complete line, `\n` (and a trailing `\r`) removed; blank lines included. */
  onLine(line: Uint8Array): void;
  /** A line went over the cap; called once per such line, as soon as it is detected. */
  onOversize(): void;
  /** Bytes after the last `\n` when the stream ended; they are dropped. */
  onTrailing?(bytes: number): void;
}

const encoder = new TextEncoder();

function concat(parts: readonly Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * Reads `source` to its end, calling `handlers.onLine` for every line. At most
 * `maxLineBytes` plus one chunk is ever buffered, whatever the stream holds.
 * @param source a byte stream such as `process.stdin` (string chunks are encoded as UTF-8)
 * @param options.maxLineBytes the largest line accepted, in bytes, excluding the `\n`
 * @returns when the stream ends; rejects if the stream errors
 * @example
 * await readLines(process.stdin, { maxLineBytes: 4 << 20 }, { onLine: (l) => {}, onOversize: () => {} });
 */
export async function readLines(
  source: AsyncIterable<Uint8Array | string>,
  options: { maxLineBytes: number },
  handlers: LineHandlers,
): Promise<void> {
  const max = options.maxLineBytes;
  let parts: Uint8Array[] = [];
  let size = 0;
  let skipping = false;
  const emit = (line: Uint8Array) => {
    const end = line.length > 0 && line[line.length - 1] === 13 ? line.length - 1 : line.length;
    handlers.onLine(end === line.length ? line : line.subarray(0, end));
  };
  for await (const raw of source) {
    const chunk = typeof raw === "string" ? encoder.encode(raw) : raw;
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      if (skipping) {
        if (nl === -1) break;
        skipping = false;
        start = nl + 1;
        continue;
      }
      const piece = chunk.subarray(start, end);
      // `\r\n` endings: the `\r` does not count against the cap.
      const limit = nl !== -1 && piece.length > 0 && piece[piece.length - 1] === 13 ? max + 1 : max;
      if (size + piece.length > limit) {
        parts = [];
        size = 0;
        handlers.onOversize();
        if (nl === -1) {
          skipping = true;
          break;
        }
        start = nl + 1;
        continue;
      }
      if (nl === -1) {
        parts.push(piece.slice()); // copy: the source may reuse its buffer
        size += piece.length;
        break;
      }
      parts.push(piece);
      const line = concat(parts, size + piece.length);
      parts = [];
      size = 0;
      emit(line);
      start = nl + 1;
    }
  }
  if (size > 0) handlers.onTrailing?.(size);
}
