import assert from "node:assert/strict";
import { openEarly, takeEarlyOpen } from "./early_open.ts";
import { lockDataDir, parseLock } from "./datadir_lock.ts";
import { unpackTemplate } from "../db/template.ts";
import { openEmbedded } from "./database.ts";
import { sql } from "kysely";

/** A data directory holding an embedded database (from the shipped template), as after a first start. */
async function dataDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-early-" });
  assert.ok(await unpackTemplate(`${dir}/pglite`));
  return dir;
}

const lockOwner = (dir: string) => Deno.readTextFile(`${dir}/dutlab.pid`).then(parseLock, () => null);
const want = (dir: string) => ({ dir, worker: true, sharedBuffers: undefined });

Deno.test("openEarly takes an existing data directory and opens it in its worker; start takes both over", async () => {
  const dir = await dataDir();
  try {
    assert.equal(openEarly({ DUT_DATA_DIR: ` ${dir} `, DUT_PGLITE_WORKER: "on" }), true);
    assert.equal((await lockOwner(dir))?.pid, Deno.pid, "locked before the rest of the service loads");
    const early = await takeEarlyOpen(want(dir));
    assert.ok(early);
    assert.equal(await takeEarlyOpen(want(dir)), null, "taken once");
    const remote = await early.remote;
    const r = await remote.pglite.query<{ n: number }>("select count(*)::int as n from kysely_migration");
    assert.ok(r.rows[0]!.n > 0, "the template's schema, opened");
    await remote.close();
    early.lock.release();
    assert.equal(await lockOwner(dir), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openEarly leaves every other start to the usual path", async () => {
  const dir = await dataDir();
  const empty = await Deno.makeTempDir({ prefix: "dutlab-early-" });
  try {
    const on = { DUT_DATA_DIR: dir, DUT_PGLITE_WORKER: "on" };
    assert.equal(openEarly({ ...on, DATABASE_URL: "postgres://u@127.0.0.1/db" }), false, "PostgreSQL");
    assert.equal(openEarly({ ...on, DUT_PGLITE_WORKER: "off" }), false, "PGlite in the main thread");
    assert.equal(openEarly({ ...on, DUT_PGLITE_SHARED_BUFFERS: "32MB" }), false, "buffers to validate first");
    await Deno.mkdir(`${empty}/pglite`);
    assert.equal(openEarly({ ...on, DUT_DATA_DIR: empty }), false, "a half-made database directory");
    const held = await lockDataDir(dir);
    assert.equal(openEarly(on), false, "a lock file present: in use, or stale (its warning needs the log)");
    held.release();
    assert.equal(await takeEarlyOpen(want(dir)), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test("an early open the environment does not ask for after all is closed and the directory let go", async () => {
  const dir = await dataDir();
  try {
    assert.equal(openEarly({ DUT_DATA_DIR: dir, DUT_PGLITE_WORKER: "on" }), true);
    assert.equal(await takeEarlyOpen({ dir: `${dir}/other`, worker: true, sharedBuffers: undefined }), null);
    assert.equal(await lockOwner(dir), null, "lock released");
    // The usual start then takes the directory (no stale-lock takeover, no DATA_DIR_IN_USE).
    (await lockDataDir(dir)).release();
    // A start whose environment does not parse lets go the same way (start.ts: takeEarlyOpen(null)).
    assert.equal(openEarly({ DUT_DATA_DIR: dir, DUT_PGLITE_WORKER: "on" }), true);
    assert.equal(await takeEarlyOpen(null), null);
    assert.equal(await lockOwner(dir), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a first start opens early too: the worker unpacks the template and opens it; openEmbedded takes it", async () => {
  const root = await Deno.makeTempDir({ prefix: "dutlab-early-" });
  const dir = `${root}/new/data`; // not made yet
  try {
    assert.equal(openEarly({ DUT_DATA_DIR: dir, DUT_PGLITE_WORKER: "on" }), true);
    assert.equal((await lockOwner(dir))?.pid, Deno.pid, "the new directory made and locked");
    const early = await takeEarlyOpen(want(dir));
    assert.ok(early?.fresh, "a first start's");
    await using db = await openEmbedded(dir, undefined, true, early);
    const r = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(db.kysely);
    assert.ok(r.rows[0]!.n > 0, "the template's schema, opened in the worker");
    assert.ok(db.reclaim, "in a worker");
    await Deno.stat(`${dir}/pglite/PG_VERSION`);
    await db.close();
    early.lock.release();
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a first start's early open not taken over leaves nothing behind", async () => {
  const root = await Deno.makeTempDir({ prefix: "dutlab-early-" });
  try {
    // A start whose environment does not parse (start.ts: takeEarlyOpen(null)): the directory it made goes.
    assert.equal(openEarly({ DUT_DATA_DIR: `${root}/data`, DUT_PGLITE_WORKER: "on" }), true);
    assert.equal(await takeEarlyOpen(null), null);
    assert.deepEqual([...Deno.readDirSync(root)], [], "no data directory left");
    // An existing directory that the environment names differently keeps what was there before.
    await Deno.writeTextFile(`${root}/keep.txt`, "x");
    assert.equal(openEarly({ DUT_DATA_DIR: root, DUT_PGLITE_WORKER: "on" }), true);
    assert.equal(await takeEarlyOpen({ dir: `${root}/other`, worker: true, sharedBuffers: undefined }), null);
    assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["keep.txt"], "its database removed");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a first start whose early open failed makes the database the usual way", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-early-" });
  try {
    await Deno.mkdir(`${dir}/pglite.new/half`, { recursive: true }); // what a failed unpack may leave
    const failed = Promise.reject(new Error("the worker could not unpack the template"));
    failed.catch(() => {});
    await using db = await openEmbedded(dir, undefined, true, { remote: failed, fresh: true });
    const r = await sql<{ n: number }>`select 1 as n`.execute(db.kysely);
    assert.equal(r.rows[0]!.n, 1, "a database (initdb's), opened");
    await Deno.stat(`${dir}/pglite/PG_VERSION`);
    await assert.rejects(Deno.stat(`${dir}/pglite.new`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
