/**
 * The hash workers (`DUT_POLL_WORKERS`, core/src/poller/hash_pool.ts): the same hashes and errors as
 * `hashSnapshot` in this thread, in order under concurrency, and workers that stop at `close()` or when idle
 * (checked through `running`: Deno's test sanitizers do not see a Web Worker left running).
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { HashPool } from "./hash_pool.ts";
import { hashSnapshot } from "./store.ts";
import { addDevice, count, fixtureDevice, setup } from "../../harness/poller_lab.ts";

/** Payloads of every JSON kind, and a few that are JSON only through `toJSON` or that have no JSON form. */
const payloads: Array<{ label: string; payload: unknown; volatile: string[] | null }> = [
  { label: "plain", payload: { b: [1, 2.5, -0, 1e21, "x"], a: { z: null, y: true } }, volatile: null },
  { label: "unicode", payload: { "é": "\u{1F600}", "\u20ac": "€", a: "\u0000" }, volatile: ["/a"] },
  {
    label: "volatile",
    payload: { up: 12, items: [{ t: 1, k: "a" }, { t: 2, k: "b" }] },
    volatile: ["/up", "/items/*/t"],
  },
  { label: "empty-volatile", payload: [], volatile: [] },
  { label: "date", payload: { at: new Date(0), n: new Number(3) }, volatile: null },
  { label: "undefined-members", payload: { a: undefined, b: [undefined] }, volatile: null },
  { label: "nan", payload: { n: NaN }, volatile: null },
  { label: "bigint", payload: { n: 1n }, volatile: null },
  { label: "surrogate", payload: { s: "\ud800" }, volatile: null },
  { label: "primitive", payload: "just a string", volatile: ["/x"] },
];

async function inThread(j: (typeof payloads)[number]) {
  try {
    return await hashSnapshot(j.label, j.payload, j.volatile);
  } catch (e) {
    return e as Error;
  }
}

Deno.test("hash workers give hashSnapshot's hashes and errors, in order", async () => {
  const pool = new HashPool(2);
  try {
    const expected = await Promise.all(payloads.map(inThread));
    // One poll at a time, and many polls at once (each answer goes to its own poll).
    const one = await pool.hashAll(payloads);
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, k) => pool.hashAll(payloads.slice(k % payloads.length))),
    );
    assert.ok(pool.running >= 1 && pool.running <= 2, `running ${pool.running}`);
    for (const [k, got] of [one, ...many].entries()) {
      const want = k === 0 ? expected : expected.slice((k - 1) % payloads.length);
      assert.equal(got.length, want.length);
      got.forEach((g, i) => {
        const w = want[i]!;
        if (w instanceof Error) {
          assert.ok(g instanceof Error, `${payloads[i]!.label}: an error`);
          assert.equal(g.message, w.message);
        } else {
          assert.ok(!(g instanceof Error), `${w.label}: ${(g as Error).message}`);
          assert.deepEqual(
            { ...g, payload: undefined },
            { ...w, payload: undefined, stableSha256: w.stableSha256 ?? null },
            w.label,
          );
          assert.equal(g.payload, w.payload, "the payload is the adapter's own object");
        }
      });
    }
    assert.ok(expected.some((e) => e instanceof Error), "some payloads have no JSON form");
    // A payload that structured clone refuses (a function member) is hashed in this thread, with its poll.
    const fn = { label: "function", payload: { f: () => 1, a: 1 }, volatile: null };
    const [h0, h1] = await pool.hashAll([payloads[0]!, fn]);
    assert.deepEqual([(h0 as { sha256: string }).sha256, (h1 as { text: string }).text], [
      (expected[0] as { sha256: string }).sha256,
      '{"a":1}',
    ]);
  } finally {
    pool.close();
  }
  assert.equal(pool.running, 0);
  // Closed: hashed in this thread.
  const after = await pool.hashAll(payloads.slice(0, 1));
  assert.equal(
    (after[0] as { sha256: string }).sha256,
    (await hashSnapshot("plain", payloads[0]!.payload)).sha256,
  );
  assert.equal(pool.running, 0);
});

Deno.test("idle hash workers stop by themselves", async () => {
  const pool = new HashPool(1, 50);
  await pool.hashAll(payloads.slice(0, 2));
  assert.equal(pool.running, 1);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(pool.running, 0);
  // and start again when needed
  await pool.hashAll(payloads.slice(0, 1));
  assert.equal(pool.running, 1);
  pool.close();
});

Deno.test("no workers: everything is hashed in this thread", async () => {
  const pool = new HashPool(0);
  const got = await pool.hashAll(payloads);
  assert.equal(pool.running, 0);
  assert.equal(got.length, payloads.length);
});

dbTest("polls hashed on workers store what polls hashed in this thread store", async (db) => {
  const hashes = async (workers: string) => {
    const { svc } = await setup(db, { DUT_POLL_WORKERS: workers });
    await using dev = await fixtureDevice();
    try {
      const id = await addDevice(svc, dev.sim.url);
      const r = await svc.poller.poll(id);
      assert.equal(r.lastPollStatus, "ok", r.lastPollError);
      assert.equal(await count(db, "snapshots", id), 3);
      return (await db.kysely.selectFrom("snapshots").select([
        "endpoint_label",
        "payload_sha256",
        "stable_sha256",
      ])
        .where("device_id", "=", id).orderBy("endpoint_label").execute());
    } finally {
      svc.poller.close();
    }
  };
  const inThreadRows = await hashes("0");
  const onWorkers = await hashes("2");
  assert.deepEqual(onWorkers, inThreadRows);
});
