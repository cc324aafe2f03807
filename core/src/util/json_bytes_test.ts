import assert from "node:assert/strict";
import { CHUNK, jsonBytes } from "./json_bytes.ts";

const reference = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** A pre-flight-like result: `n` checks, an em dash in the summary, and non-ASCII text in chosen checks. */
function result(n: number, oddAt: number[] = []) {
  return {
    planIdentifier: "plan-a",
    ranAt: new Date(Date.UTC(2026, 10, 27)),
    checksRun: n,
    pass: n > 0,
    checks: Array.from({ length: n }, (_, i) => ({
      checkId: `check-${i % 3}`,
      deviceId: crypto.randomUUID(),
      deviceHostname: oddAt.includes(i) ? `fw-${i}-zürich-東京` : `fw-${i}`,
      pass: i % 2 === 0,
      detail: `line "${i}"\n\t\\ \u0001 \u2028 ${oddAt.includes(i) ? "😀 \ud800" : ""}`,
      evidence: i % 7 ? { snapshotId: String(i), collectedAt: "2026-11-27T00:00:00.000Z" } : null,
      dropped: undefined,
    })),
    summary: `${n}/${n} checks passed — ready for plan-a`,
    selection: undefined,
  };
}

Deno.test("jsonBytes gives the bytes of JSON.stringify for results around every chunk boundary", () => {
  for (const n of [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 1, 3000]) {
    for (const odd of [[], [0], [n - 1], [CHUNK], [CHUNK - 1, CHUNK + 1]]) {
      const v = result(n, odd.filter((i) => i >= 0 && i < n));
      assert.deepEqual(jsonBytes(v), reference(v), `n=${n} odd=${odd}`);
    }
  }
});

Deno.test("jsonBytes keeps JSON.stringify's treatment of odd members and of values that are not plain objects", () => {
  const big = Array.from(
    { length: CHUNK * 2 + 3 },
    (_, i) => i % 5 === 0 ? undefined : i % 5 === 1 ? () => i : i,
  );
  const sparse = new Array(CHUNK + 10);
  sparse[3] = "x";
  const values: unknown[] = [
    {},
    { a: undefined },
    { f: () => 1, s: Symbol("s"), n: null, nan: NaN, inf: -Infinity, neg: -0 },
    { 'key "quoted" — é': 1, "": 2, 10: "ten", 2: "two" },
    { big, sparse, nested: { big } },
    { d: new Date(0), withToJSON: { toJSON: () => ({ replaced: true }) } },
    Object.assign(Object.create(null), { nullProto: big }),
    [1, "two", { three: 3 }],
    Array.from({ length: CHUNK * 3 }, (_, i) => ({ i })),
    "a string — with a dash",
    42,
    null,
    new Date(1),
    { toJSON: () => "own toJSON" },
    new (class Point {
      x = 1;
      y = big;
    })(),
  ];
  for (const v of values) assert.deepEqual(jsonBytes(v), reference(v));
});

Deno.test("jsonBytes throws where JSON.stringify throws or gives nothing", () => {
  const cyclic: Record<string, unknown> = { list: [] as unknown[] };
  (cyclic.list as unknown[]).push(cyclic);
  assert.throws(() => jsonBytes(cyclic), TypeError);
  assert.throws(() => jsonBytes({ n: 1n }), TypeError);
  assert.throws(() => jsonBytes(undefined), /no JSON form/);
});
