/**
 * The dashboard's two short reads on a history of `N` snapshots (default 10^5) of 100 devices over 10 days
 * (the prune scenario's data: two labels, `system_info` changing every 20th poll, `ntp_config` 3 times): a
 * device's snapshot listing (`listSnapshots`, limit 20) and its change history (`listChanges`, limit 20), each
 * called `ITER` times (default 1,000) after 100 warm-up calls, p50 and p90, twice. `VACUUM=1` vacuums after the
 * build (the bulk load leaves the series rows' dead versions, which a database with autovacuum would not
 * keep). The history is written through the `snapshots` view, so the script also runs on a checkout from
 * before migration 0017 (with `listChanges` imported from `core/src/snapshots/diff.ts` there), which is how
 * the before figures of BENCHMARKS.md section 10c were taken; that is why its build repeats the prune
 * scenario's instead of importing it (the older checkout's scenario differs).
 *
 *     deno run -A --lock=deno.dev.lock bench/micro_reads.ts pglite
 *     VACUUM=1 deno run -A --lock=deno.dev.lock bench/micro_reads.ts postgres
 *
 * @module
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { listSnapshots } from "../core/harness/core.ts";
import { listChanges } from "../core/harness/core.ts";
import { buildRegistry } from "../core/harness/core.ts";
import { modules } from "../modules.gen.ts";
import { freshDb } from "./_db.ts";
const backend = (Deno.args[0] ?? "postgres") as "postgres" | "pglite";
const DEVICES = 100, SNAPSHOTS = Number(Deno.env.get("N") ?? 100_000), DAYS = 10;
await using db = await freshDb(backend);
const k = db.kysely;
const registry = buildRegistry(modules);
const perLabel = Math.floor(SNAPSHOTS / DEVICES / 2);
const stepMs = Math.floor(DAYS * 86_400_000 / perLabel);
const end = Date.now() - 60_000;
const start = new Date(end - perLabel * stepMs);
const devices = Array.from(
  { length: DEVICES },
  (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
);
const sha = (s: string) => createHash("sha256").update(s).digest("hex");
for (const [i, d] of devices.entries()) {
  await sql`insert into devices (id, hostname, vendor, device_role, base_url, username, password_enc,
      tls_verify_mode, poll_interval_seconds)
    values (${d}, ${`bench-fw-${i}`}, 'vendor-b-ngfw', 'ngfw', 'https://192.0.2.1', 'admin', 'x', 'insecure', 60)`
    .execute(k);
  const text = sql`case l.k when 0 then '{"device":"' || ${
    String(i)
  } || '","uptime":' || (g / 20)::text || '}'
    else '{"device":"' || ${
    String(i)
  } || '","servers":["10.0.0.' || (g * 4 / ${perLabel}::int)::text || '"]}' end`;
  const rows = sql`from generate_series(0, ${
    perLabel - 1
  }::int) g cross join (values (0, 'system_info'), (1, 'ntp_config')) l(k, label)`;
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    select distinct encode(sha256(convert_to(t, 'UTF8')), 'hex'), t, octet_length(t)
    from (select ${text} as t ${rows}) x on conflict do nothing`.execute(k);
  await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
      test_run_execution_id, adapter_module, adapter_version)
    select ${d}::uuid, l.label, encode(sha256(convert_to(${text}, 'UTF8')), 'hex'),
      case l.k when 0 then ${
    sha(`system_info-${i}`)
  } else encode(sha256(convert_to(${text}, 'UTF8')), 'hex') end,
      ${start}::timestamptz + g * make_interval(secs => ${stepMs / 1000}), null,
      '@dutlab/adapter-vendor-b-ngfw', '1.0.0' ${rows} order by g, l.k`.execute(k);
}
await sql`insert into snapshot_latest (device_id, endpoint_label, snapshot_id)
  select device_id, endpoint_label, max(id) from snapshots group by 1, 2 on conflict do nothing`.execute(k);
await sql.raw(Deno.env.get("VACUUM") ? "vacuum analyze" : "analyze").execute(k);
const time = async (name: string, f: (d: string) => Promise<unknown>) => {
  for (let i = 0; i < 100; i++) await f(devices[i % DEVICES]!);
  const ms: number[] = [];
  for (let i = 0; i < Number(Deno.env.get("ITER") ?? 1000); i++) {
    const t = performance.now();
    await f(devices[i % DEVICES]!);
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  console.log(
    `${backend} ${name}: p50 ${ms[ms.length >> 1]!.toFixed(3)} p90 ${
      ms[Math.floor(ms.length * 0.9)]!.toFixed(3)
    } ms`,
  );
};
await time("list device limit 20", (d) => listSnapshots(k, { deviceId: d, limit: 20 }));
await time("changes limit 20", (d) => listChanges(k, registry, d, { limit: 20 }));
await time("list device limit 20", (d) => listSnapshots(k, { deviceId: d, limit: 20 }));
await time("changes limit 20", (d) => listChanges(k, registry, d, { limit: 20 }));
