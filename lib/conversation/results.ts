/**
 * Tool results as the LLM receives them (SPEC section 6.7): text blocks joined with `\n`,
 * images kept, empty output replaced by `(no output)`, long text cut in the middle with a
 * notice giving the original size.
 * @module
 */

import { base64DecodedBytes } from "../util/base64.ts";
import type { ResultBlock } from "./types.ts";
import { byteLength, clampUtf8, tailUtf8 } from "../util/utf8.ts";

/** What an empty tool output is sent as (SPEC section 6.7; CASES C23). */
export const NO_OUTPUT = "(no output)";

const encoder = new TextEncoder();

/**
 * Cuts `text` to at most `maxBytes` UTF-8 bytes by removing its middle, with a notice that
 * gives the original size. Text within the limit is returned unchanged.
 * @param maxBytes at least 256 (smaller values are raised to 256)
 */
export function truncateMiddle(text: string, maxBytes: number): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  const limit = Math.max(256, maxBytes);
  const notice = `\n\n[… output truncated: ${bytes.length} bytes in all, the middle ${
    bytes.length - limit
  } bytes or more were removed …]\n\n`;
  const room = Math.max(0, limit - byteLength(notice));
  const head = clampUtf8(text, Math.ceil(room / 2));
  const tail = tailUtf8(bytes, Math.floor(room / 2));
  return head + notice + tail;
}

/**
 * Normalises a tool's content for history: adjacent text blocks joined with `\n`, blank
 * output replaced by {@link NO_OUTPUT}, text over `maxBytes` (all text blocks together)
 * cut in the middle. Images are kept as they are.
 */
export function formatToolContent(content: readonly ResultBlock[], maxBytes: number): ResultBlock[] {
  const out: ResultBlock[] = [];
  let text: string[] = [];
  const flush = () => {
    if (text.length > 0) out.push({ type: "text", text: text.join("\n") });
    text = [];
  };
  for (const block of content) {
    if (block.type === "text") text.push(block.text);
    else {
      flush();
      out.push(block);
    }
  }
  flush();
  const texts = out.filter((b): b is { type: "text"; text: string } => b.type === "text");
  const total = texts.reduce((n, b) => n + byteLength(b.text), 0);
  if (total > maxBytes) {
    // Share the budget between text blocks in proportion to their size.
    for (const block of texts) {
      block.text = truncateMiddle(block.text, Math.floor((maxBytes * byteLength(block.text)) / total));
    }
  }
  const kept = out.filter((b) => b.type !== "text" || b.text.trim() !== "");
  if (kept.length === 0) kept.push({ type: "text", text: NO_OUTPUT });
  return kept;
}

/** The text of a result's blocks, images as markers: for display and events. */
export function contentText(content: readonly ResultBlock[]): string {
  return content
    .map((b) => (b.type === "text" ? b.text : imageMarker(b.mimeType, b.data)))
    .join("\n");
}

/**
 * The text that stands for a base64 image wherever a result is shown as text (SPEC section
 * 6.7): in `tool-end` events, in the model's tool-result text and in summary requests.
 * @example imageMarker("image/png", "aGk=") // "[image: image/png, 2 bytes]"
 */
export function imageMarker(mimeType: string, base64: string): string {
  return `[image: ${mimeType}, ${base64DecodedBytes(base64)} bytes]`;
}
