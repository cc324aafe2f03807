/**
 * CLI output at lab size (issue 49 points 4-5): `lab diff`/`lab apply`'s plan and note, and the device list,
 * print summaries first and a screenful, then how many more; `--verbose` prints all.
 */
import assert from "node:assert/strict";
import { planLines } from "./_lab.ts";
import { deviceListText } from "./_devices.ts";
import { bounded, boundedNames, BoundedProgress, painter, SCREENFUL } from "./_output.ts";
import { GLOBAL_FLAGS } from "./_command.ts";

const plain = painter(false);
const hosts = (n: number, p = "fw") => Array.from({ length: n }, (_, i) => `${p}-${i}`);

Deno.test("bounded: a screenful, then how many more; verbose prints all", () => {
  assert.deepEqual(bounded(hosts(3), false, "x"), hosts(3));
  const b = bounded(hosts(5000), false, "device(s)");
  assert.equal(b.length, SCREENFUL + 1);
  assert.equal(b.at(-1), "… and 4980 more device(s) (--verbose for all, --json for the data)");
  assert.equal(bounded(hosts(5000), true, "x").length, 5000);
  assert.equal(boundedNames(hosts(25), false), `${hosts(20).join(", ")} and 5 more (--verbose for all)`);
  assert.ok(GLOBAL_FLAGS.verbose, "every command takes --verbose");
});

Deno.test("lab plan of a file that leaves 5,000 devices out: the note names a screenful", () => {
  const plan = {
    lab: "lab1",
    generation: 3,
    planHash: "sha256:x",
    summary: { create: 30, update: 0, remove: 0, conflict: 0, unchanged: 100 },
    devices: [
      ...hosts(30, "new").map((hostname) => ({ hostname, action: "create", changes: [] })),
      ...hosts(100, "same").map((hostname) => ({ hostname, action: "unchanged", changes: [] })),
    ],
    notInFile: hosts(5000, "left"),
    testbeds: [],
  } as unknown as Parameters<typeof planLines>[0];
  const { out, notes } = planLines(plan, plain, false);
  assert.equal(out[0], "Plan: 30 to create, 0 to update, 0 to remove", "the summary first");
  assert.equal(out.filter((l) => l.startsWith("+ create")).length, SCREENFUL);
  assert.ok(out.includes("… and 10 more change(s) (--verbose for all, --json for the data)"));
  assert.ok(out.includes("= 100 unchanged (--verbose lists them)"));
  assert.equal(notes.length, 1);
  assert.ok(notes[0]!.length < 600, `one short note, not ${notes[0]!.length} characters`);
  assert.match(
    notes[0]!,
    /^note: 5000 device\(s\) of lab lab1 are not in the file .*left-19 and 4980 more \(--verbose for all\)$/,
  );
  const all = planLines(plan, plain, true);
  assert.equal(all.out.length, 1 + 30 + 100);
  assert.ok(all.notes[0]!.includes("left-4999"));
});

Deno.test("devices list of 5,000: counts per status first, a screenful of rows, how many more", () => {
  const devices = hosts(5000, "dut").map((hostname, i) => ({
    id: `id-${i}`,
    hostname,
    vendor: "vendor-a-ngfw",
    deviceRole: null,
    enabled: true,
    lastPollStatus: i % 50 === 0 ? "ok" : "unreachable",
    lastPollAt: null,
    reservation: null,
  })) as unknown as Parameters<typeof deviceListText>[0];
  const lines = deviceListText(devices, plain, false).split("\n");
  assert.equal(lines[0], "5000 devices: 100 ok, 4900 unreachable");
  assert.match(lines[1]!, /^HOSTNAME\s+VENDOR/);
  assert.equal(lines.length, 2 + SCREENFUL + 1);
  assert.equal(lines.at(-1), "… and 4980 more device(s) (--verbose for all, --json for the data)");
  assert.equal(deviceListText(devices, plain, true).split("\n").length, 5001, "--verbose: header and all");
  const few = deviceListText(devices.slice(0, 3), plain, false).split("\n");
  assert.equal(few.length, 4, "a short list is the table alone");
});

Deno.test("snapshot --all of 5,000 devices: failures first (a screenful), then how many lines were left out", () => {
  const lines: string[] = [];
  const p = new BoundedProgress(5000, false, (l) => lines.push(l));
  for (let i = 0; i < 5000; i++) {
    p.line(`[${i + 1}/5000] dut-${i}  ${i % 100 ? "ok" : "unreachable"}`, i % 100 === 0);
  }
  p.end();
  assert.equal(lines.length, SCREENFUL + 1);
  assert.ok(lines.slice(0, SCREENFUL).every((l) => l.endsWith("unreachable")), "the failures are printed");
  assert.equal(
    lines.at(-1),
    "… 4980 more device line(s) not printed (4950 ok, 30 failed; --verbose for all, --json for the data)",
  );
  const all: string[] = [];
  const v = new BoundedProgress(5000, true, (l) => all.push(l));
  for (let i = 0; i < 5000; i++) v.line(`x${i}`, false);
  v.end();
  assert.equal(all.length, 5000, "--verbose prints every line and no tail");
  const few: string[] = [];
  const f = new BoundedProgress(4, false, (l) => few.push(l));
  for (let i = 0; i < 4; i++) f.line(`y${i}`, false);
  f.end();
  assert.deepEqual(few, ["y0", "y1", "y2", "y3"]);
});
