import { expect, test } from "bun:test";
import { mean, median } from "./stats.ts";

test("mean of three numbers", () => {
  expect(mean([2, 4, 6])).toBe(4);
});

test("mean of an empty list is 0", () => {
  expect(mean([])).toBe(0);
});

test("median of an odd and an even count", () => {
  expect(median([3, 1, 2])).toBe(2);
  expect(median([4, 1, 3, 2])).toBe(2.5);
});
