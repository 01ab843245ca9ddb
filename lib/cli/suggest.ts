/**
 * "Did you mean …?" for the command line: the known word closest to a mistyped flag or
 * command, by edit distance or as a prefix.
 * @module
 */

/**
 * The edit distance between `a` and `b`: insertions, deletions, substitutions and swaps of
 * two neighbouring characters each count 1 (optimal string alignment), so `apc` is 1 from `acp`.
 * @example editDistance("jsn", "json") // 1
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: the distance between a's first i characters and b's first j.
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate `word` was most likely meant to be, or `undefined` when none is close.
 * Leading dashes, a `=value` and case are ignored when comparing. Close means: a prefix of
 * the candidate (`--mcp`, `-j`), or within an edit distance of a third of the word's length,
 * at least 1 (`--jsn`, `--mcpconfig`, `rn`). The nearest wins; on a tie, the first candidate.
 * @example closest("--mcp", ["--json", "--mcp-config"]) // "--mcp-config"
 * @example closest("--nope", ["--json", "--mcp-config"]) // undefined
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const bare = (s: string) => s.replace(/^-+/, "").replace(/=.*$/s, "").toLowerCase();
  const typed = bare(word);
  if (typed === "") return undefined;
  const limit = Math.max(1, Math.floor(typed.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const known = bare(candidate);
    const distance = known.startsWith(typed) ? 0 : editDistance(typed, known);
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
