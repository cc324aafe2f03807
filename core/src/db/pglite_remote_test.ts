import assert from "node:assert/strict";
import { sql } from "kysely";
import { openDatabase } from "./open.ts";
import { loadTemplate } from "./template.ts";
import { isUniqueViolation } from "./errors.ts";
import { openRemotePglite, PGLITE_SHARED_BUFFERS } from "./pglite_remote.ts";

const open = async () => openDatabase({ worker: true, loadDataDir: (await loadTemplate()) ?? undefined });

Deno.test("PGlite in a worker: rows keep their types, errors keep their SQLSTATE and constraint", async () => {
  await using db = await open();
  const [row] = (await sql<{ n: number; t: Date; b: Uint8Array; j: unknown }>`
    select ${41}::int + 1 as n, now() as t, '\\x0102'::bytea as b, '{"a":[1]}'::jsonb as j`
    .execute(db.kysely)).rows;
  assert.equal(row!.n, 42);
  assert.ok(row!.t instanceof Date);
  assert.deepEqual([...row!.b], [1, 2]);
  assert.deepEqual(row!.j, { a: [1] });
  await sql`create table w(a int primary key, s text)`.execute(db.kysely);
  await db.kysely.insertInto("w" as never).values({ a: 1, s: "x" } as never).execute();
  const dup = await db.kysely.insertInto("w" as never).values({ a: 1, s: "y" } as never).execute().then(
    () => null,
    (e) => e,
  );
  assert.ok(isUniqueViolation(dup));
  assert.equal(dup.code, "23505");
  assert.equal(dup.constraint, "w_pkey");
  await assert.rejects(sql`select 1/0`.execute(db.kysely), { code: "22012" });
});

Deno.test("PGlite in a worker: a transaction commits or rolls back as a whole, and holds the session", async () => {
  await using db = await open();
  await sql`create table w(a int primary key)`.execute(db.kysely);
  const count = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from w`.execute(db.kysely)).rows[0]!.n;
  await assert.rejects(
    db.kysely.transaction().execute(async (tx) => {
      await sql`insert into w values (${1})`.execute(tx);
      await sql`insert into w values (${1})`.execute(tx);
    }),
    { code: "23505" },
  );
  assert.equal(await count(), 0);
  // A statement outside the open transaction waits for it: it sees the committed rows.
  let outside: Promise<number> | undefined;
  await db.kysely.transaction().execute(async (tx) => {
    await sql`insert into w values (${1})`.execute(tx);
    outside = count();
    await sql`insert into w values (${2})`.execute(tx);
  });
  assert.equal(await outside, 2);
  assert.equal(await count(), 2);
  // Named statements: the same text many times, and after DDL that changes its result type.
  for (let i = 0; i < 5; i++) assert.equal(await count(), 2);
  await sql`alter table w add column b text default 'z'`.execute(db.kysely);
  assert.deepEqual((await sql`select * from w order by a`.execute(db.kysely)).rows, [
    { a: 1, b: "z" },
    { a: 2, b: "z" },
  ]);
});

Deno.test("PGlite in a worker: transactions queued behind one another, BEGIN not waited for, stay whole", async () => {
  // The stand-in itself (Kysely's one-connection mutex would queue these on this side first).
  const remote = await openRemotePglite({ sharedBuffers: PGLITE_SHARED_BUFFERS });
  try {
    const pg = remote.pglite;
    await pg.query("create table w(a int primary key)");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inA!: () => void;
    const aStarted = new Promise<void>((r) => (inA = r));
    const a = pg.transaction(async (tx) => {
      await tx.query("insert into w values (1)");
      inA();
      await held;
      await tx.query("insert into w values (2)");
    });
    await aStarted;
    // Queued behind A in the worker: one whose function fails before any statement (its end arrives before its
    // BEGIN ran), one that fails on a statement, one that commits; none sees A half-written or stays open.
    const early = pg.transaction(() => Promise.reject(new Error("before any statement")));
    const dup = pg.transaction(async (tx) => {
      await tx.query("insert into w values (10)");
      await tx.query("insert into w values (10)");
    });
    const seen = pg.transaction(async (tx) => {
      const n = (await tx.query<{ n: number }>("select count(*)::int as n from w")).rows[0]!.n;
      await tx.query("insert into w values (3)");
      return n;
    });
    release();
    await a;
    await assert.rejects(early, /before any statement/);
    await assert.rejects(dup, { code: "23505" });
    assert.equal(await seen, 2, "after A's commit, not within it");
    const rows = (await pg.query<{ a: number }>("select a from w order by a")).rows;
    assert.deepEqual(rows.map((r) => r.a), [1, 2, 3]);
  } finally {
    await remote.close();
  }
});

Deno.test("PGlite in a worker: closed, it refuses statements", async () => {
  const db = await open();
  await db.close();
  await db.close(); // twice is fine
  await assert.rejects(sql`select 1`.execute(db.kysely));
});

Deno.test("PGlite in a worker: reclaim collects the worker's own heap, which this thread's collection cannot", async () => {
  await using db = await open();
  // About 20 MiB of text decoded in the worker, then copied to this thread: garbage in the worker's heap.
  const rows = (await sql<{ s: string }>`select repeat(g::text, 500) as s from generate_series(1, 10000) g`
    .execute(db.kysely)).rows;
  assert.equal(rows.length, 10000);
  // After a full collection the worker's heap holds none of it (V8 may have collected some on its own first,
  // so the bound is on what is left, not on what this call freed).
  const r = await db.reclaim!();
  assert.ok(r.after <= r.before && r.after < 24 * 2 ** 20, `heap in use ${r.before} -> ${r.after} bytes`);
});
