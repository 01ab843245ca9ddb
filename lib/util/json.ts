/**
 * Reading parsed JSON whose shape is not known yet.
 * @module
 */

/** `value` as a JSON object (not `null`, not an array), else `undefined`. */
export function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}
