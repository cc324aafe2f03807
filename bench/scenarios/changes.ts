/**
 * Issue 22 point 6 (part): the change history of a device with 10^6 snapshots (`listChanges`, what
 * `GET /api/admin/dut/devices/{id}/changes` answers). One firewall, two labels polled alternately: its
 * `system_info` never changes and its `ntp_config` changes `CHANGES` times, evenly spread, so the first page
 * has to reach back to the oldest change (the worst case for a reader that walks the polls). Rows are
 * inserted with generate_series through the real insert trigger that sets `payload_changed`. Timed: the first
 * page (default limit 20: every change) and a later page (limit 2, the third page, through the cursor), on
 * PostgreSQL and on PGlite.
 *
 * @module
 */
import { sql } from "kysely";
import { listChanges } from "../../core/src/snapshots/diff.ts";
import { canonicalJson, sha256Hex } from "../../core/src/util/hash.ts";
import { buildRegistry } from "../../core/src/registry.ts";
import { modules } from "../../modules.gen.ts";
import { type Figure, pct, round } from "../_util.ts";
import { type Backend, freshDb } from "../_db.ts";
import type { Ctx } from "../main.ts";

const SNAPSHOTS = 1_000_000;
const CHANGES = 6;
const DEVICE = "7d0c1a52-5a1e-4f0b-9c3e-0d9b6c2a1e01";

async function one(ctx: Ctx, backend: Backend): Promise<Figure[]> {
  await using db = await freshDb(backend);
  const k = db.kysely;
  const registry = buildRegistry(modules);
  await sql`insert into devices (id, hostname, vendor, device_role, base_url, username, password_enc,
      tls_verify_mode, poll_interval_seconds)
    values (${DEVICE}, 'bench-fw-1', 'vendor-a-ngfw', 'ngfw', 'https://192.0.2.1', 'admin', 'x', 'insecure', 60)`
    .execute(k);
  // CHANGES + 1 NTP payloads (one server list each) and one system_info payload.
  const texts = [
    ...Array.from(
      { length: CHANGES + 1 },
      (_, i) => canonicalJson({ servers: [`10.0.0.${i + 1}`, "10.0.1.1"] }),
    ),
    canonicalJson({ hostname: "bench-fw-1", softwareVersion: "7.4.1", model: "FX-4200" }),
  ];
  const shas = await Promise.all(texts.map((t) => sha256Hex(t)));
  for (const [i, t] of texts.entries()) {
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
      values (${shas[i]}, ${t}, ${new TextEncoder().encode(t).length})`.execute(k);
  }
  const ntp = sql.raw(`array[${shas.slice(0, CHANGES + 1).map((s) => `'${s}'`).join(",")}]`);
  const t0 = performance.now();
  // Odd polls: ntp_config, its payload index stepping every SNAPSHOTS / (CHANGES + 1) rows; even: system_info.
  const batch = 100_000;
  for (let from = 1; from <= SNAPSHOTS; from += batch) {
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
        adapter_version)
      select ${DEVICE}::uuid,
        case when g % 2 = 1 then 'ntp_config' else 'system_info' end,
        case when g % 2 = 1 then (${ntp})[1 + ((g - 1) * ${CHANGES + 1}) / ${SNAPSHOTS}]
          else ${shas[CHANGES + 1]} end,
        timestamptz '2026-01-01' + g * interval '30 seconds',
        '@dutlab/adapter-vendor-a-ngfw', '1.0.0'
      from generate_series(${from}::int, ${Math.min(SNAPSHOTS, from + batch - 1)}::int) g`.execute(k);
  }
  await sql`analyze snapshots`.execute(k);
  ctx.log(`${backend}: ${SNAPSHOTS} snapshots inserted in ${round((performance.now() - t0) / 1000)} s`);

  const iterations = ctx.quick ? 10 : 30;
  const time = async (f: () => Promise<number>, expect: number) => {
    const times: number[] = [];
    for (let i = 0; i < iterations + 2; i++) {
      const s = performance.now();
      const n = await f();
      const ms = performance.now() - s;
      if (n !== expect) throw new Error(`expected ${expect} changes, got ${n}`);
      if (i >= 2) times.push(ms); // two warm-up rounds
    }
    return times;
  };
  const page = async (limit: number, cursor?: string) => {
    const r = await listChanges(k, registry, DEVICE, { limit, cursor });
    if (!("changes" in r)) throw new Error(`listChanges: ${JSON.stringify(r)}`);
    return r;
  };
  const first = await time(async () => (await page(20)).changes.length, CHANGES);
  const p2 = (await page(2)).nextCursor!;
  const p3 = (await page(2, p2)).nextCursor!;
  const later = await time(async () => (await page(2, p3)).changes.length, 2);
  ctx.log(
    `${backend}: first page p50 ${round(pct(first, 50))} ms, third page p50 ${round(pct(later, 50))} ms`,
  );
  const params = { backend, snapshots: SNAPSHOTS, labels: 2, changes: CHANGES, iterations };
  return [
    ...[50, 95].map((p) => ({
      scenario: "changes",
      name: `change history of 10^6 snapshots, first page (limit 20), ${backend}, p${p}`,
      value: round(pct(first, p)),
      unit: "ms",
      params,
      target: "≤ 100 ms",
      pass: pct(first, p) <= 100,
      command: ctx.command,
    })),
    ...[50, 95].map((p) => ({
      scenario: "changes",
      name: `change history of 10^6 snapshots, third page (limit 2, cursor), ${backend}, p${p}`,
      value: round(pct(later, p)),
      unit: "ms",
      params,
      target: "≤ 100 ms",
      pass: pct(later, p) <= 100,
      command: ctx.command,
    })),
  ];
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const only = Deno.env.get("BENCH_CHANGES_BACKENDS")?.split(",") as Backend[] | undefined;
  const out: Figure[] = [];
  for (const b of only ?? ["postgres", "pglite"] as Backend[]) out.push(...await one(ctx, b));
  return out;
}
