/**
 * Issue 33 point 1: `GET /api/events` delivers every kept event exactly once, in increasing id order, when ids
 * cross a power of ten (9→10, 99→100, 999→1000) and when the tail or a replay reads a full 500-row page: on
 * replay from 0, on resume from any id, and live. Ids were once ordered as text ("10" before "9"), so a
 * replay from 0 sent `1 10 11 … 19 2 20 …`, a resume from 5 never sent 6-9, and the live tail set its cursor
 * from the textually last row (repeating or skipping events).
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import type { Db } from "../db/open.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";

/** Insert `n` events straight into the table (as another instance would, without waking this one). */
async function fill(db: Db, n: number): Promise<void> {
  await sql`insert into events (type, data)
    select 'poll.finished', '{"filled":' || g || '}' from generate_series(1, ${n}::int) as g`.execute(
    db.kysely,
  );
}

/** Every stored id, in numeric order (the order the stream must follow). */
async function storedIds(db: Db): Promise<string[]> {
  const rows = await sql<{ id: string }>`select id::text as id from events`.execute(db.kysely);
  return rows.rows.map((r) => BigInt(r.id)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);
}

/** Reads one SSE response body in the background and collects the ids of its events (control frames apart). */
class Stream {
  ids: string[] = [];
  control: string[] = [];
  #reader: ReadableStreamDefaultReader<string>;
  #done: Promise<void>;
  constructor(body: ReadableStream) {
    this.#reader = body.pipeThrough(new TextDecoderStream()).getReader();
    this.#done = this.#read();
  }
  async #read() {
    let buf = "";
    for (;;) {
      const { value, done } = await this.#reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buf += value;
      let end: number;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const id = block.split("\n").find((l) => l.startsWith("id: "))?.slice(4);
        const event = block.split("\n").find((l) => l.startsWith("event: "))?.slice(7);
        if (id !== undefined) this.ids.push(id);
        else if (event !== undefined) this.control.push(event);
      }
    }
  }
  /** Wait until `last` arrived (or the stream went quiet for long), then give what arrived. */
  async until(last: string): Promise<string[]> {
    for (let i = 0; i < 1200 && !this.ids.includes(last); i++) await new Promise((r) => setTimeout(r, 25));
    return this.ids;
  }
  async close() {
    await this.#reader.cancel().catch(() => {});
    await this.#done;
  }
}

/** The ids after `after`, in order. */
const after = (ids: string[], n: bigint) => ids.filter((id) => BigInt(id) > n);

dbTest(
  "events: replay from 0 and resume from any id, across 9→10, 99→100, 999→1000 and 500-row pages",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    try {
      await fill(db, 1205);
      const ids = await storedIds(db);
      assert.equal(ids.length, 1205);
      for (const crossing of ["9", "10", "99", "100", "999", "1000"]) {
        assert.ok(
          ids.includes(crossing),
          crossing,
        );
      }
      const last = ids[ids.length - 1]!;

      // The bus itself: pages of 500, each in numeric order, the next one starting after the last of the previous.
      const paged: string[] = [];
      for (let cursor = 0n;;) {
        const rows = await svc.events.read(cursor, 500);
        paged.push(...rows.map((r) => r.id));
        if (rows.length < 500) break;
        cursor = BigInt(rows[rows.length - 1]!.id);
      }
      assert.deepEqual(paged, ids, "read() pages cover every event once, in numeric order");

      // Replay from 0, then resumes from ids around each crossing and inside/at the edge of a 500-row page.
      for (const from of [0n, 5n, 8n, 9n, 10n, 95n, 99n, 100n, 500n, 501n, 700n, 995n, 999n, 1000n, 1204n]) {
        const res = await app.request("/api/events", { headers: { ...auth, "last-event-id": String(from) } });
        assert.equal(res.status, 200);
        const s = new Stream(res.body!);
        const got = await s.until(last);
        await s.close();
        assert.deepEqual(
          got,
          after(ids, from),
          `resumed from ${from}: every kept event after it, once, in order`,
        );
        assert.deepEqual(s.control, ["stream.open"], `resumed from ${from}: no reset (nothing was dropped)`);
      }
    } finally {
      await svc.events.close();
    }
  },
);

dbTest("events: live delivery across 9→10, 99→100, 999→1000 and a full 500-row tail page", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules(), { DUT_EVENTS_FLUSH_MS: "0" });
  // What the bus hands to its listeners, and two streams: one live from the start, one resuming from 5
  // (catching up, then live).
  await svc.events.start();
  const heard: string[] = [];
  const unsubscribe = svc.events.subscribe((e) => heard.push(e.id));
  const live = new Stream((await app.request("/api/events", { headers: auth })).body!);
  const publishOne = (i: number) =>
    svc.events.publish("poll.finished", {
      deviceId: `live-${i}`,
      hostname: `live-${i}`,
      vendor: "vendor-z-test",
      status: "ok",
      summary: "",
      at: new Date(0).toISOString(),
    });
  let resumed: Stream | undefined;
  /** After each step, every event so far has reached the bus listener and both streams, once, in order. */
  const delivered = async (what: string) => {
    const ids = await storedIds(db);
    const last = ids[ids.length - 1]!;
    for (let i = 0; i < 1200 && !heard.includes(last); i++) await new Promise((r) => setTimeout(r, 25));
    assert.deepEqual(heard, ids, `${what}: the bus hands every event to its listeners once, in order`);
    assert.deepEqual(await live.until(last), ids, `${what}: the live stream has every event once, in order`);
    if (resumed) {
      assert.deepEqual(await resumed.until(last), after(ids, 5n), `${what}: resumed from 5, then live`);
    }
    return ids;
  };
  try {
    // 1..12 one at a time (9→10 live).
    for (let i = 0; i < 12; i++) await publishOne(i);
    await delivered("9→10");
    resumed = new Stream(
      (await app.request("/api/events", { headers: { ...auth, "last-event-id": "5" } })).body!,
    );
    await delivered("resumed from 5");
    // Another instance's rows land without waking this one, then four publishes in parallel wake the tail,
    // which reads across 99→100 in one go.
    await fill(db, 85);
    await Promise.all([0, 1, 2, 3].map(publishOne));
    await delivered("99→100");
    // One wake, then a tail read of more than a full 500-row page: the tail reads on past the first page, and
    // its cursor comes from the numerically last row.
    await fill(db, 600);
    await publishOne(0);
    await delivered("a 500-row page and more");
    // Across 999→1000, four in parallel after rows the tail has not seen.
    await fill(db, 293);
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(publishOne));
    const ids = await delivered("999→1000");
    assert.ok(ids.length > 1000 && ["9", "10", "99", "100", "999", "1000"].every((c) => ids.includes(c)));
  } finally {
    unsubscribe();
    await live.close();
    await resumed?.close();
    await svc.events.close();
  }
});
