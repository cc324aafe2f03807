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
  b.rules[200]!.action = "deny";
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

Deno.test("the diff leaves both payloads as they were, and each summary keeps the value it read", () => {
  // An own "__proto__" member (JSON.parse makes one; a literal would set the prototype) is a plain member.
  const a = { rules: rules(50), meta: JSON.parse('{"__proto__": {"x": 1}, "rev": 1}') };
  const b = structuredClone(a) as typeof a & { rules: Array<Record<string, unknown>> };
  b.rules[3]!.action = "deny";
  b.rules.splice(10, 1);
  b.rules.splice(0, 0, { id: -1 });
  b.meta.rev = 2;
  Object.getOwnPropertyDescriptor(b.meta, "__proto__")!.value.x = 2;
  const frozenA = JSON.stringify(a);
  const frozenB = JSON.stringify(b);
  const d = diffPayloads(a, b);
  assert.equal(JSON.stringify(a), frozenA);
  assert.equal(JSON.stringify(b), frozenB);
  assert.deepEqual(d.patch.map((o) => `${o.op} ${o.path}`), [
    "add /rules/0",
    "replace /rules/4/action",
    "remove /rules/11",
    "replace /meta/__proto__/x",
    "replace /meta/rev",
  ]);
  // The remove read rule 11 of the document as the earlier operations left it (a's rule 10), and it stays so.
  const removed = d.changes.find((x) => x.op === "remove")!;
  assert.deepEqual(removed.before, a.rules[10]);
  assert.ok(d.changes.some((x) => x.path === "/meta/__proto__/x" && x.before === 1 && x.after === 2));
  assert.equal(Object.getPrototypeOf(a.meta), Object.prototype);
});

Deno.test("many operations on one array: every summary reads the intermediate document", () => {
  const a = { list: Array.from({ length: 400 }, (_, i) => i) };
  const b = { list: a.list.filter((i) => i % 3 !== 0).map((i) => i % 5 === 0 ? -i : i) };
  const d = diffPayloads(a, b);
  // Replaying the summaries by hand gives b: each "before" is what the document held at that point.
  const doc = [...a.list];
  for (const ch of d.changes) {
    const i = Number(ch.path.split("/")[2]);
    if (ch.op === "remove") assert.equal(doc.splice(i, 1)[0], ch.before);
    else if (ch.op === "add") doc.splice(i, 0, ch.after as number);
    else {
      assert.equal(doc[i], ch.before);
      doc[i] = ch.after as number;
    }
  }
  assert.deepEqual(doc, b.list);
});
