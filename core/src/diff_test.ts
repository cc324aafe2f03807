import assert from "node:assert/strict";
import { applyPatch } from "rfc6902";
import { diffPayloads } from "./diff.ts";

const rules = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: i, name: `rule-${i}`, action: "allow" }));

Deno.test("array diffs: an inserted, removed or changed rule is one operation, and the patch applies", () => {
  const a = { rules: rules(300), y: [1, 2, 3] };
  const b = structuredClone(a) as { rules: Array<Record<string, unknown>>; y: number[] };
  b.rules.splice(10, 0, { id: -1 });
  b.rules.splice(100, 2);
  b.rules[200].action = "deny";
  b.rules.push({ id: 999 });
  b.y = [0, 1, 3, 4];
  const d = diffPayloads(a, b);
  assert.deepEqual(d.patch.map((o) => `${o.op} ${o.path}`), [
    "add /rules/10",
    "remove /rules/100",
    "remove /rules/100",
    "replace /rules/200/action",
    "add /rules/299",
    "add /y/0",
    "remove /y/2",
    "add /y/3",
  ]);
  const c = structuredClone(a);
  assert.ok(applyPatch(c, d.patch).every((e) => e === null));
  assert.deepEqual(c, b);
  // Summaries read "before" from the document as the earlier operations left it.
  assert.deepEqual(d.changes[1], { op: "remove", path: "/rules/100", before: a.rules[99] });
  assert.deepEqual(d.changes[3], {
    op: "replace",
    path: "/rules/200/action",
    before: "allow",
    after: "deny",
  });
  assert.deepEqual(d.changes[0], { op: "add", path: "/rules/10", after: { id: -1 } });
});

Deno.test("a rule inserted at the top of 20000 rules is one add (no edit-distance matrix, no stack overflow)", () => {
  const a = { rules: rules(20000) };
  const b = { rules: [{ id: -1 }, ...rules(20000)] };
  assert.deepEqual(diffPayloads(a, b).patch, [{ op: "add", path: "/rules/0", value: { id: -1 } }]);
});

Deno.test("whole-document and type changes", () => {
  assert.deepEqual(diffPayloads({ a: 1 }, [1]).changes, [{
    op: "replace",
    path: "",
    before: { a: 1 },
    after: [1],
  }]);
  assert.deepEqual(diffPayloads({ a: { b: 1 } }, { a: "x" }).patch, [{
    op: "replace",
    path: "/a",
    value: "x",
  }]);
  assert.deepEqual(diffPayloads({ "a/b": 1 }, {}).changes, [{ op: "remove", path: "/a~1b", before: 1 }]);
});
