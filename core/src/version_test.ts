import assert from "node:assert/strict";
import { coreSatisfies } from "./version.ts";

Deno.test("core-range check follows npm semver caret rules (issue 21: ^0.2.0 no longer admits 0.3.0)", () => {
  const cases: Array<[string, string, boolean]> = [
    ["^0.2.0", "0.3.0", false],
    ["^0.2.0", "0.2.9", true],
    ["^0.2.3", "0.2.2", false],
    ["^0.0.3", "0.0.4", false],
    ["^0.0.3", "0.0.3", true],
    ["^1.0.0", "1.4.2", true],
    ["^1.5.0", "1.4.2", false],
    ["^1.0.0", "2.0.0", false],
    ["^0.9.0", "1.0.0", false],
    ["^1.0.0", "1.1.0-rc.1", false],
    [" ^1.0.0 ", "1.0.0", true],
    ["1.x", "1.0.0", false],
    [">=1.0.0", "1.0.0", false],
    ["^1.0", "1.0.0", false],
    ["^1.0.0", "not-a-version", false],
  ];
  for (const [range, version, expected] of cases) {
    assert.equal(coreSatisfies(range, version), expected, `${range} admits ${version}`);
  }
});
