/**
 * UTF-8 sizes and cuts that never split a character: the one place the core measures and
 * clamps text by bytes (tool results, descriptions, hook text, summary prompts).
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 length of `text` in bytes (a lone surrogate counts 3, as U+FFFD). */
export function byteLength(text: string): number {
  return encoder.encode(text).length;
}

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes at a character boundary, with `marker`
 * appended when anything was cut (the marker's bytes count toward `maxBytes`). Text within the
 * limit is returned unchanged; a limit too small for the marker gives `""`.
 * @example clampUtf8("héllo", 2) // "h"
 * @example clampUtf8("ééé", 5, "…") // "…" is 3 bytes, so "é…"
 */
export function clampUtf8(text: string, maxBytes: number, marker = ""): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes - byteLength(marker);
  if (end < 0) return "";
  // Step back over continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end)) + marker;
}

/** The last `maxBytes` bytes of `bytes` as text, never splitting a character. */
export function tailUtf8(bytes: Uint8Array, maxBytes: number): string {
  let start = Math.max(0, bytes.length - maxBytes);
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  return decoder.decode(bytes.subarray(start));
}
