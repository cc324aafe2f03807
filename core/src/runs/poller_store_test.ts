/**
 * Group commit of poll results (core/src/poller/store.ts) and batched per-device locks: results of polls
 * that finish together share one transaction, yet each poll keeps its own outcome.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import type { Db } from "../db/open.ts";
import { dbTest } from "../../harness/db.ts";
import { decryptAlertWriter } from "./alerts.ts";
import { DeviceLocks } from "../poller/device_locks.ts";
import {
  hashSnapshot,
  LostLockError,
  type Outcome,
  PARALLEL_BATCH,
  PollStore,
  type PollWriteHook,
} from "../poller/store.ts";
import type { Services } from "../runtime/services.ts";
import { addDevice, count, setup } from "../../harness/poller_lab.ts";
import { Foreground } from "../util/foreground.ts";

const MODULE = { name: "@dutlab/adapter-fixture", version: "0.0.1" };

/** A snapshot as the poll store writes it (`hashSnapshot`). */
const snap = hashSnapshot;

async function ok(n: number, shared: unknown): Promise<Outcome> {
  return {
    status: "ok",
    error: "collected 3 snapshot(s)",
    snapshots: [
      await snap("deploy_status", { device: n }),
      await snap("decrypt_policy", shared), // the same payload on every device: stored once
      await snap("ntp_config", { servers: [`10.0.0.${n}`] }),
    ],
  };
}

async function devices(svc: Services, n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await addDevice(svc, `https://192.0.2.${i + 1}`));
  return await Promise.all(ids.map((id) => svc.devices.get(id)));
}

async function lastPoll(db: Db, id: string) {
  const r = await sql<{ status: string | null; error: string | null; at: Date | string | null }>`
    select last_poll_status as status, last_poll_error as error, last_poll_at as at from devices where id = ${id}`
    .execute(db.kysely);
  const row = r.rows[0];
  if (!row) throw new Error(`device ${id} not found`);
  return row;
}

dbTest("poll results written together share one transaction and keep their own outcomes", async (db) => {
  const { svc } = await setup(db);
  const rows = await devices(svc, 10);
  const store = new PollStore(db.kysely, { hooks: [decryptAlertWriter(svc.registry)] });
  const shared = { mode: "off", rules: 3 };
  const outcomes: Outcome[] = await Promise.all(
    rows.map(async (_, i) =>
      i % 3 === 2
        ? { status: "unreachable", error: `connect ECONNREFUSED #${i}`, snapshots: [] }
        : await ok(i, shared)
    ),
  );
  const stored = await Promise.all(rows.map((r, i) => store.write(r, MODULE, outcomes[i]!)));
  // One transaction: one database clock for every poll in it.
  assert.equal(new Set(stored.map((s) => s.at.getTime())).size, 1);
  // 7 polls with 3 snapshots: 2 distinct payloads each + the shared one.
  assert.equal(stored.reduce((a, s) => a + s.newPayloads, 0), 7 * 2 + 1);
  assert.equal(await count(db, "snapshot_payloads"), 15);
  for (const [i, r] of rows.entries()) {
    const want = outcomes[i]!;
    assert.equal(await count(db, "snapshots", r.id), want.snapshots.length, `snapshots of device ${i}`);
    assert.equal(await count(db, "snapshot_latest", r.id), want.snapshots.length);
    const p = await lastPoll(db, r.id);
    assert.deepEqual([p.status, p.error], [want.status, want.error]);
    assert.equal(new Date(p.at!).getTime(), stored[i]!.at.getTime());
  }
  // Each latest pointer names that device's own snapshot of that label, with that device's payload.
  const latest = await sql<
    { device_id: string; endpoint_label: string; payload_sha256: string; sid: string }
  >`
    select l.device_id, l.endpoint_label, s.payload_sha256, s.device_id::text as sid
    from snapshot_latest l join snapshots s on s.id = l.snapshot_id`.execute(db.kysely);
  for (const l of latest.rows) {
    assert.equal(l.sid, l.device_id);
    const i = rows.findIndex((r) => r.id === l.device_id);
    assert.equal(l.payload_sha256, outcomes[i]!.snapshots.find((s) => s.label === l.endpoint_label)!.sha256);
  }
  // Written again (a second round): the shared and unchanged payloads are not stored twice.
  const again = await Promise.all(rows.map((r, i) => store.write(r, MODULE, outcomes[i]!)));
  assert.equal(again.reduce((a, s) => a + s.newPayloads, 0), 0);
  assert.equal(await count(db, "snapshots"), 7 * 3 * 2);
});

dbTest(
  "a lost write guard rejects only the polls it guards; a deleted device records nothing",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, 5);
    const store = new PollStore(db.kysely, { hooks: [decryptAlertWriter(svc.registry)] });
    let asked = 0;
    const lost = () => {
      asked++;
      return Promise.resolve(false);
    };
    await svc.devices.delete(rows[4]!.id);
    const results = await Promise.allSettled(
      rows.map(async (r, i) => store.write(r, MODULE, await ok(i, { i }), i < 2 ? lost : undefined)),
    );
    assert.equal(asked, 1, "one guard is asked once per transaction");
    for (const i of [0, 1]) {
      const r = results[i]!;
      assert.ok(r.status === "rejected" && r.reason instanceof LostLockError, `poll ${i} lost its lock`);
      assert.equal(await count(db, "snapshots", rows[i]!.id), 0);
      assert.equal((await lastPoll(db, rows[i]!.id)).status, null);
    }
    for (const i of [2, 3]) {
      assert.equal(results[i]!.status, "fulfilled");
      assert.equal(await count(db, "snapshots", rows[i]!.id), 3);
      assert.equal((await lastPoll(db, rows[i]!.id)).status, "ok");
    }
    const gone = results[4]!;
    assert.ok(gone.status === "fulfilled" && gone.value.newPayloads === 0);
    assert.equal(await count(db, "snapshots", rows[4]!.id), 0);
  },
);

dbTest("when a shared transaction fails, each poll is written on its own", async (db) => {
  const { svc } = await setup(db);
  const rows = await devices(svc, 4);
  const store = new PollStore(db.kysely, { hooks: [decryptAlertWriter(svc.registry)] });
  await sql`create function refuse_poison() returns trigger language plpgsql as $$
    begin raise exception 'injected failure'; end $$`.execute(db.kysely);
  // On the series: the narrow rows (migration 0017) carry no label, and a poison label's series is new.
  await sql`create trigger refuse_poison before insert on snapshot_series for each row
    when (new.endpoint_label = 'poison') execute function refuse_poison()`.execute(db.kysely);
  const outcomes = await Promise.all(rows.map(async (_, i) => {
    const o = await ok(i, { i });
    if (i === 1) o.snapshots[2] = await snap("poison", { i });
    return o;
  }));
  const results = await Promise.allSettled(rows.map((r, i) => store.write(r, MODULE, outcomes[i]!)));
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled", "fulfilled"]);
  assert.match(String((results[1] as PromiseRejectedResult).reason), /injected failure/);
  assert.equal(await count(db, "snapshots", rows[1]!.id), 0);
  assert.equal((await lastPoll(db, rows[1]!.id)).status, null);
  for (const i of [0, 2, 3]) assert.equal(await count(db, "snapshots", rows[i]!.id), 3);
});

// Per-device locks exist on PostgreSQL only: without TEST_DATABASE_URL this test shows as ignored.
dbTest("per-device locks taken together are held per device across instances", async (db) => {
  assert.equal(db.kind, "postgres");
  const a = new DeviceLocks(db);
  const b = new DeviceLocks(db);
  try {
    const ids = Array.from({ length: 20 }, () => crypto.randomUUID());
    assert.deepEqual(await Promise.all(ids.map((id) => a.tryLock(id))), ids.map(() => true));
    assert.deepEqual(await Promise.all(ids.map((id) => b.tryLock(id))), ids.map(() => false));
    await Promise.all(ids.slice(0, 10).map((id) => a.unlock(id)));
    assert.deepEqual(
      await Promise.all(ids.map((id) => b.tryLock(id))),
      ids.map((_, i) => i < 10),
      "only the released devices can be taken",
    );
    await Promise.all(ids.slice(10).map((id) => a.unlock(id)));
    await Promise.all(ids.slice(0, 10).map((id) => b.unlock(id)));
  } finally {
    await a.close();
    await b.close();
  }
}, { only: ["postgres"] });

dbTest("write hooks run inside the store's transaction with what was stored, in order", async (db) => {
  const { svc } = await setup(db);
  const rows = await devices(svc, 3);
  const seen: string[] = [];
  const store = new PollStore(db.kysely, {
    hooks: [
      async ({ tx, at, executionId, polls }) => {
        // The snapshots just inserted are visible through the hook's transaction.
        const ids = polls.flatMap((p) => p.rows.map((r) => r.id));
        const n = await tx.selectFrom("snapshots").select((eb) => eb.fn.countAll<number>().as("n"))
          .where("collected_at", "=", at).executeTakeFirstOrThrow();
        assert.equal(Number(n.n), ids.length);
        assert.equal(executionId, null, "no run is active");
        for (const p of polls) {
          assert.deepEqual(p.rows.map((r) => r.endpoint_label), p.snapshots.map((s) => s.label));
        }
        seen.push(`first:${polls.map((p) => p.device.hostname).sort().join(",")}`);
      },
      () => Promise.resolve(void seen.push("second")),
    ],
  });
  const outcomes: Outcome[] = [
    await ok(0, { a: 1 }),
    { status: "unreachable", error: "down", snapshots: [] },
    await ok(2, { a: 1 }),
  ];
  await Promise.all(rows.map((r, i) => store.write(r, MODULE, outcomes[i]!)));
  // The poll without snapshots is not handed to the hooks; the hooks ran once, first before second.
  assert.deepEqual(seen, [`first:${[rows[0]!.hostname, rows[2]!.hostname].sort().join(",")}`, "second"]);

  // A hook that throws rolls its poll's write back (its snapshots and the device update), like a failed insert.
  const failing = new PollStore(db.kysely, {
    hooks: [() => Promise.reject(new Error("hook failed"))],
  });
  const before = await count(db, "snapshots", rows[1]!.id);
  await assert.rejects(() => failing.write(rows[1]!, MODULE, outcomes[0]!), /hook failed/);
  assert.equal(await count(db, "snapshots", rows[1]!.id), before);
  assert.equal((await lastPoll(db, rows[1]!.id)).status, "unreachable");
});

dbTest(
  "a write hook's announcements are handed to the poll they name, in order, and never run by the store",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, 2);
    const announced: string[] = [];
    const say = (text: string) => () => Promise.resolve(void announced.push(text));
    const store = new PollStore(db.kysely, {
      hooks: [
        ({ polls, announce }) => {
          for (const p of polls) announce(p.device.id, say(`first:${p.device.hostname}`));
          return Promise.resolve();
        },
        ({ polls, announce }) => {
          announce(polls[0]!.device.id, say(`second:${polls[0]!.device.hostname}`));
          return Promise.resolve();
        },
      ],
    });
    const outcomes = [await ok(0, { a: 1 }), await ok(1, { a: 1 })];
    // Written in one turn: one batch, so the second hook names only one of the two polls.
    const [a, b] = await Promise.all(rows.map((r, i) => store.write(r, MODULE, outcomes[i]!)));
    // The store hands each poll its own announcements without running them; the caller runs them.
    assert.equal(announced.length, 0);
    const all = [...a!.announcements!, ...b!.announcements!];
    for (const run of a!.announcements!) await run();
    for (const run of b!.announcements!) await run();
    const first = [a!, b!].findIndex((s) => s.announcements!.length === 2);
    assert.notEqual(first, -1, "the poll the second hook named has two announcements");
    assert.equal(all.length, 3);
    assert.deepEqual(
      announced.filter((t) => t.endsWith(rows[first]!.hostname)),
      [`first:${rows[first]!.hostname}`, `second:${rows[first]!.hostname}`],
    );

    // A hook that throws after announcing rolls the write back: the poll rejects and carries nothing to announce.
    const failing = new PollStore(db.kysely, {
      hooks: [({ polls, announce }) => {
        announce(polls[0]!.device.id, say("never"));
        return Promise.reject(new Error("hook failed"));
      }],
    });
    await assert.rejects(() => failing.write(rows[0]!, MODULE, outcomes[0]!), /hook failed/);
    assert.ok(!announced.includes("never"));
  },
);

dbTest(
  "the poll store's set-based write and an insert through the snapshots view set the same change flags",
  async (db) => {
    // The same sequence of (payload, stable hash) per label written to one device by the poll store
    // (core/src/snapshots/write.ts) and to another through the view's INSTEAD OF trigger (migration 0017).
    const { svc } = await setup(db);
    const [viaStore, viaView] = await devices(svc, 2);
    const store = new PollStore(db.kysely);
    // label -> a sequence of [payload, stable hash given] (null: not computed; "same": equal to the payload)
    const steps: Array<Array<[unknown, "a" | "b" | "same" | null]>> = [
      [[{ v: 1 }, "a"], [{ v: 1 }, "a"], [{ v: 2 }, "a"], [{ v: 3 }, "b"], [{ v: 3 }, "b"], [{ v: 4 }, null]],
      [[{ w: 1 }, null], [{ w: 2 }, "a"], [{ w: 3 }, "a"], [{ w: 3 }, "same"], [{ w: 4 }, "same"]],
    ];
    const stableOf = (h: { sha256: string }, s: "a" | "b" | "same" | null) =>
      s === null ? null : s === "same" ? h.sha256 : s.repeat(64);
    for (let k = 0; k < 6; k++) {
      const hashed = [];
      for (const [n, seq] of steps.entries()) {
        const step = seq[k];
        if (!step) continue;
        const h = await snap(`label_${n}`, step[0]);
        hashed.push({ ...h, stableSha256: stableOf(h, step[1]) });
      }
      await store.write(viaStore!, MODULE, { status: "ok", error: "", snapshots: hashed });
      for (const h of hashed) {
        await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
        adapter_module, adapter_version) values (${viaView!.id}, ${h.label}, ${h.sha256}, ${h.stableSha256},
        now(), ${MODULE.name}, ${MODULE.version})`.execute(db.kysely);
      }
    }
    const flags = async (device: string) =>
      (await sql<{ endpoint_label: string; payload_changed: boolean; stable_changed: boolean | null }>`
      select endpoint_label, payload_changed, stable_changed from snapshots where device_id = ${device}
      order by endpoint_label, id`.execute(db.kysely)).rows;
    const a = await flags(viaStore!.id);
    assert.equal(a.length, 11);
    assert.deepEqual(a, await flags(viaView!.id));
    // And they are the flags the rule gives: label_0 unchanged, changed (same stable), changed (stable moved),
    // unchanged, changed with no stable hash.
    assert.deepEqual(
      a.filter((r) => r.endpoint_label === "label_0").map((r) => [r.payload_changed, r.stable_changed]),
      [[false, false], [false, false], [true, false], [true, true], [false, false], [true, null]],
    );
    assert.deepEqual(
      a.filter((r) => r.endpoint_label === "label_1").map((r) => [r.payload_changed, r.stable_changed]),
      [[false, false], [true, null], [true, false], [false, false], [true, true]],
    );
  },
);

dbTest(
  "with two writers a second transaction starts beside a busy one once PARALLEL_BATCH results wait",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, PARALLEL_BATCH + 3);
    // A hook that holds each transaction open until the test lets it go, counting those open at once.
    let open = 0, most = 0;
    const entered: Array<() => void> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let holding = false;
    const hold: PollWriteHook = async (batch) => {
      if (!holding) return;
      open++;
      most = Math.max(most, open);
      entered.shift()?.();
      await gate;
      open--;
      assert.ok(batch.polls.length > 0);
    };
    const enteredOnce = () => new Promise<void>((r) => entered.push(r));
    const store = new PollStore(db.kysely, { hooks: [hold], writers: 2 });
    const write = (i: number) =>
      store.write(rows[i]!, MODULE, { status: "ok", error: "collected 0 snapshot(s)", snapshots: [] });
    // Device 0's payloads are its own: a transaction inserting a payload another one has inserted and not yet
    // committed waits for that commit (the unique index), and the first one is held open below.
    const withSnapshots = async (i: number) =>
      store.write(rows[i]!, MODULE, await ok(i, i === 0 || i > PARALLEL_BATCH ? { own: i } : { shared: 1 }));

    // A first poll of the module stores its adapter release: a transaction adding one waits for another that
    // added it and has not committed, as with a shared payload.
    await withSnapshots(PARALLEL_BATCH + 2);
    holding = true;
    // The first result is written at once; three more wait for it (fewer than PARALLEL_BATCH).
    const first = enteredOnce();
    const p0 = withSnapshots(0);
    await first;
    const few = [1, 2, 3].map((i) => withSnapshots(i));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(store.writing, 1, "no second writer for a few results");
    // PARALLEL_BATCH - 4 more: one short of the threshold, still one writer.
    const second = enteredOnce();
    const many = rows.slice(4, PARALLEL_BATCH).map((_, k) => withSnapshots(4 + k));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(store.writing, 1, "no second writer at PARALLEL_BATCH - 1 waiting results");
    // One more: now PARALLEL_BATCH wait, and a second transaction starts beside the first.
    many.push(withSnapshots(PARALLEL_BATCH));
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      second,
      new Promise((_, reject) =>
        timer = setTimeout(() => {
          release(); // the held transaction ends, so the database closes after the failure
          reject(new Error("no second transaction"));
        }, 10_000)
      ),
    ]).finally(() => clearTimeout(timer));
    assert.equal(store.writing, 2);
    assert.equal(most, 2, "two transactions open at once");
    // A third result waits: at most `writers` transactions.
    const last = write(PARALLEL_BATCH + 1);
    release();
    const stored = await Promise.all([p0, ...few, ...many, last]);
    // The first transaction held one poll; the second took every result that waited (one database clock).
    assert.equal(new Set(stored.slice(1, PARALLEL_BATCH + 1).map((s) => s.at.getTime())).size, 1);
    assert.notEqual(stored[0]!.at.getTime(), stored[1]!.at.getTime());
    for (let i = 0; i <= PARALLEL_BATCH; i++) {
      assert.equal(await count(db, "snapshots", rows[i]!.id), 3, `snapshots of device ${i}`);
    }
    assert.equal((await lastPoll(db, rows[PARALLEL_BATCH + 1]!.id)).status, "ok");
    // The first poll's and device 0's three payloads, two of each other device's and the one they share, once.
    assert.equal(await count(db, "snapshot_payloads"), 3 + 3 + PARALLEL_BATCH * 2 + 1);
    assert.equal(store.writing, 0);
  },
  { only: ["postgres"] },
);

dbTest("a poll whose payloads are stored already sends none of them again", async (db) => {
  const { svc } = await setup(db);
  const rows = await devices(svc, 3);
  const store = new PollStore(db.kysely, { hooks: [decryptAlertWriter(svc.registry)] });
  // A row trigger before insert sees every row an INSERT proposes, those ON CONFLICT DO NOTHING then drops too.
  await sql`create table payload_inserts (sha256 text)`.execute(db.kysely);
  await sql`create function count_payload_insert() returns trigger language plpgsql as $$
    begin insert into payload_inserts values (new.sha256); return new; end $$`.execute(db.kysely);
  await sql`create trigger count_payload_insert before insert on snapshot_payloads for each row
    execute function count_payload_insert()`.execute(db.kysely);
  const proposed = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from payload_inserts`.execute(db.kysely)).rows[0]!.n;
  const shared = { mode: "off" };
  const first = await Promise.all(rows.map(async (r, i) => store.write(r, MODULE, await ok(i, shared))));
  // 3 devices × 2 own payloads + the shared one, each proposed once.
  assert.equal(first.reduce((a, s) => a + s.newPayloads, 0), 7);
  assert.equal(await proposed(), 7);
  // Polled again, unchanged but for device 1's NTP servers: only that payload is sent.
  const again = await Promise.all(rows.map(async (r, i) => {
    const o = await ok(i, shared);
    if (i === 1) o.snapshots[2] = await snap("ntp_config", { servers: ["10.9.9.9"] });
    return store.write(r, MODULE, o);
  }));
  assert.deepEqual(again.map((s) => s.newPayloads), [0, 1, 0]);
  assert.equal(await proposed(), 8);
  assert.equal(await count(db, "snapshot_payloads"), 8);
  assert.equal(await count(db, "snapshots"), 18);
  // Every snapshot names its own payload.
  const wrong = await sql<{ n: number }>`select count(*)::int as n from snapshots s
    left join snapshot_payloads p on p.sha256 = s.payload_sha256 where p.sha256 is null`.execute(db.kysely);
  assert.equal(wrong.rows[0]!.n, 0);
});

dbTest(
  "with lingerMs an idle store waits for more results and writes them in one transaction",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, 4);
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const pair = async (store: PollStore, a: number, b: number) => {
      const first = store.write(rows[a]!, MODULE, await ok(a, { a }));
      await wait(20);
      const second = store.write(rows[b]!, MODULE, await ok(b, { b }));
      return (await Promise.all([first, second])).map((s) => s.at.getTime());
    };
    // Without it the first result is written at once, and the second one in a transaction of its own.
    const [a0, a1] = await pair(new PollStore(db.kysely), 0, 1);
    assert.notEqual(a0, a1);
    // With it the first waits, and the second, 20 ms later, joins it: one transaction, one database clock.
    const [b0, b1] = await pair(new PollStore(db.kysely, { lingerMs: 200 }), 2, 3);
    assert.equal(b0, b1);
    for (const r of rows) assert.equal(await count(db, "snapshots", r.id), 3);
  },
);

dbTest(
  "while the API is busy, scheduled polls' results wait busyLingerMs for more; a manual snapshot's ends the wait",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, 6);
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const foreground = new Foreground();
    const store = new PollStore(db.kysely, { lingerMs: 5, busyLingerMs: 300, foreground });
    const at = (s: { at: Date }) => s.at.getTime();
    // The API quiet: a scheduled poll's result waits lingerMs only; one 60 ms later is a transaction of its own.
    const q0 = store.write(rows[0]!, MODULE, await ok(0, { q: 0 }), undefined, true);
    await wait(60);
    const q1 = store.write(rows[1]!, MODULE, await ok(1, { q: 1 }), undefined, true);
    assert.notEqual(at(await q0), at(await q1));
    // The API busy: the first scheduled result waits, the second 60 ms later joins it.
    const done = foreground.enter();
    const t0 = performance.now();
    const b0 = store.write(rows[2]!, MODULE, await ok(2, { b: 2 }), undefined, true);
    await wait(60);
    const b1 = store.write(rows[3]!, MODULE, await ok(3, { b: 3 }), undefined, true);
    assert.equal(at(await b0), at(await b1));
    assert.ok(performance.now() - t0 >= 250, "the batch waited for busyLingerMs");
    // Still busy: a manual snapshot's result (not background) ends the wait of a scheduled one at once.
    const m0 = store.write(rows[4]!, MODULE, await ok(4, { m: 4 }), undefined, true);
    await wait(20);
    const t1 = performance.now();
    const m1 = store.write(rows[5]!, MODULE, await ok(5, { m: 5 }));
    assert.equal(at(await m0), at(await m1));
    assert.ok(performance.now() - t1 < 250, "the manual snapshot did not wait for busyLingerMs");
    done();
    for (const r of rows) assert.equal(await count(db, "snapshots", r.id), 3);
  },
);

dbTest(
  "with lingerAfterBatch, while the API is busy, results that arrive during a batch wait busyLingerMs",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, 6);
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const cases = [
      { busy: false, lingerAfterBatch: true, waits: false },
      { busy: true, lingerAfterBatch: false, waits: false }, // PGlite in the main thread, PostgreSQL
      { busy: true, lingerAfterBatch: true, waits: true }, // PGlite in a worker
    ];
    for (const [i, { busy, lingerAfterBatch, waits }] of cases.entries()) {
      const foreground = new Foreground();
      const done = busy ? foreground.enter() : () => {};
      let late: Promise<{ at: Date }> | null = null;
      let lateDone = false;
      const [a, b] = [rows[2 * i]!, rows[2 * i + 1]!];
      // A scheduled poll's result arrives while the first batch (a manual snapshot: written at once) is written.
      const hook: PollWriteHook = async () => {
        if (late) return;
        late = store.write(b, MODULE, await ok(1, { late: i }), undefined, true);
        late.then(() => lateDone = true, () => {});
      };
      const store = new PollStore(db.kysely, {
        busyLingerMs: 10_000,
        foreground,
        hooks: [hook],
        lingerAfterBatch,
      });
      await store.write(a, MODULE, await ok(0, { first: i }));
      assert.ok(late, "the second result arrived during the first batch");
      if (!waits) {
        await late; // the next batch follows at once
      } else {
        await wait(100);
        assert.equal(lateDone, false, "busy: the second result waits for busyLingerMs");
        assert.equal(store.writing, 0, "busy: the database is free meanwhile");
        await store.close(); // ends the wait at once
        assert.equal(lateDone, true);
      }
      done();
      assert.equal(await count(db, "snapshots", b.id), 3);
    }
  },
);

dbTest(
  "payloads are stored byte for byte whether sent as a text array or as one binary parameter",
  async (db) => {
    const { svc } = await setup(db);
    const rows = await devices(svc, 4);
    const payloads = [
      { name: "grüße", unit: "€", smile: "😀", cjk: "防火墙" },
      { quote: 'a "b" \\c\\ \n\t', nul: "\u0000", sep: "\u2028", empty: "" },
      { big: "x€".repeat(100_000), list: Array.from({ length: 500 }, (_, i) => ({ i, s: `é${i}` })) },
      {},
    ];
    for (const binaryPayloads of [false, true]) {
      const store = new PollStore(db.kysely, { binaryPayloads });
      const written = await Promise.all(rows.map(async (r, i) => {
        const h = await snap("deploy_status", { binaryPayloads, p: payloads[i] });
        // A snapshot without its bytes (`bytes` is optional): the store encodes its text itself.
        if (i === 3) delete h.bytes;
        await store.write(r, MODULE, { status: "ok", error: "collected 1 snapshot(s)", snapshots: [h] });
        return h;
      }));
      for (const h of written) {
        const r = await sql<{ payload: string; size_bytes: number; sha: string }>`
        select payload, size_bytes, encode(sha256(convert_to(payload, 'UTF8')), 'hex') as sha
        from snapshot_payloads where sha256 = ${h.sha256}`.execute(db.kysely);
        const row = r.rows[0];
        assert.ok(row, `payload ${h.sha256} stored (binary ${binaryPayloads})`);
        assert.equal(row.payload, h.text);
        assert.equal(Number(row.size_bytes), h.size);
        assert.equal(row.sha, h.sha256, "the database hashes the stored text to the payload's hash");
      }
    }
  },
);
