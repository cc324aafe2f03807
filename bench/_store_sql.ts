/**
 * The store path of the poll cycle without the rest of the cycle, to separate database throughput from
 * the cycle's own cost: `storeWithPollStore` drives the production store (core/src/poller/store.ts,
 * group commit) from 64 concurrent writers as the worker does; `storePerPoll` is the store as it was
 * before group commit (one transaction per poll), kept as the baseline; `storeRound` loads a round of
 * polls through the production store (data for the other scenarios). Payloads are hashed before timing.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { Database } from "../core/harness/core.ts";
import { canonicalJson } from "../core/harness/core.ts";
import type { DeviceRow } from "../core/harness/core.ts";
import { PollStore } from "../core/harness/core.ts";
import { decryptAlertWriter } from "../core/harness/core.ts";
import type { Registry } from "../core/harness/core.ts";
import { substitute, variedIdentity, type VendorCapture } from "./_capture.ts";
import { prng } from "./_replay.ts";

export interface HashedPoll {
  deviceId: string;
  module: string;
  snapshots: Array<{ label: string; text: string; sha256: string; size: number }>;
}

/** `rounds` polls of every device, payloads changing at `changeRate` (the first round all new). */
export function makePolls(
  captures: VendorCapture[],
  devices: Array<{ id: string; vendor: string }>,
  rounds: number,
  changeRate: number,
): HashedPoll[][] {
  const rand = prng(7);
  const byVendor = new Map(captures.map((c) => [c.vendor, c]));
  const base = devices.map((d, i) => {
    const cap = byVendor.get(d.vendor)!;
    const pairs: Array<[string, string]> = cap.identity.map((s) => [s, variedIdentity(s, i + 1)]);
    return cap.snapshots.map((s) => ({ label: s.label, json: substitute(JSON.stringify(s.payload), pairs) }));
  });
  const revisions = base.map((b) => b.map(() => 0));
  const out: HashedPoll[][] = [];
  for (let r = 0; r < rounds; r++) {
    out.push(devices.map((d, i) => {
      const rev = revisions[i]!; // revisions and base have one entry per device
      if (r > 0) { for (let k = 0; k < rev.length; k++) if (rand() < changeRate) rev[k]!++; }
      return {
        deviceId: d.id,
        module: `@dutlab/adapter-${d.vendor}`,
        snapshots: base[i]!.map((b, k) => {
          const payload = JSON.parse(b.json);
          const revision = rev[k]!;
          if (revision > 0) payload.benchRevision = revision;
          const text = canonicalJson(payload);
          return {
            label: b.label,
            text,
            sha256: createHash("sha256").update(text).digest("hex"),
            size: new TextEncoder().encode(text).length,
          };
        }),
      };
    }));
  }
  return out;
}

/**
 * The production store: 64 concurrent writers hand each poll's results to `PollStore.write`, as the
 * worker's 64 concurrent polls do; polls that finish while a write is in flight share the next one.
 */
export async function storeWithPollStore(
  store: PollStore,
  rows: Map<string, DeviceRow>,
  polls: HashedPoll[],
): Promise<void> {
  const queue = [...polls];
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (queue.length) {
      const p = queue.shift()!;
      await store.write(rows.get(p.deviceId)!, { name: p.module, version: "1.0.0" }, {
        status: "ok",
        error: `collected ${p.snapshots.length} snapshot(s)`,
        snapshots: p.snapshots.map((h) => ({ ...h, payload: null })),
      });
    }
  }));
}

/** One transaction per poll: the statements of the store before group commit (the baseline). */
export async function storePerPoll(db: Kysely<Database>, p: HashedPoll): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const { now } = (await sql<{ now: Date | string }>`select now() as now`.execute(tx)).rows[0]!; // one row
    const at = new Date(now);
    await tx.selectFrom("devices").select("id").where("id", "=", p.deviceId).forUpdate().executeTakeFirst();
    const run = await tx.selectFrom("test_runs").select("execution_id").where("status", "=", "active")
      .forShare().executeTakeFirst();
    const unique = [...new Map(p.snapshots.map((h) => [h.sha256, h])).values()]
      .sort((a, b) => a.sha256 < b.sha256 ? -1 : 1);
    await tx.insertInto("snapshot_payloads")
      .values(unique.map((h) => ({ sha256: h.sha256, payload: h.text, size_bytes: h.size })))
      .onConflict((oc) => oc.column("sha256").doNothing()).returning("sha256").execute();
    const rows = await tx.insertInto("snapshots").values(p.snapshots.map((h) => ({
      device_id: p.deviceId,
      endpoint_label: h.label,
      payload_sha256: h.sha256,
      collected_at: at,
      test_run_execution_id: run?.execution_id ?? null,
      adapter_module: p.module,
      adapter_version: "1.0.0",
    }))).returning([sql<string>`id::text`.as("id"), "endpoint_label"]).execute();
    await tx.insertInto("snapshot_latest")
      .values(
        rows.map((r) => ({ device_id: p.deviceId, endpoint_label: r.endpoint_label, snapshot_id: r.id })),
      )
      .onConflict((oc) =>
        oc.columns(["device_id", "endpoint_label"]).doUpdateSet({ snapshot_id: sql`excluded.snapshot_id` })
      )
      .execute();
    await tx.updateTable("devices").set({
      last_poll_at: at,
      last_poll_status: "ok",
      last_poll_error: `collected ${p.snapshots.length} snapshot(s)`,
    }).where("id", "=", p.deviceId).execute();
  });
}

/** Load one round of polls through the production store (data for the other scenarios, not timed). */
export async function storeRound(
  db: Kysely<Database>,
  registry: Registry,
  polls: HashedPoll[],
): Promise<void> {
  const ids = polls.map((p) => p.deviceId);
  const rows = new Map(
    (await db.selectFrom("devices").selectAll().where("id", "in", ids).execute()).map((r) => [r.id, r]),
  );
  await storeWithPollStore(new PollStore(db, { hooks: [decryptAlertWriter(registry)] }), rows, polls);
}
