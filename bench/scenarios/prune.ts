/**
 * Issue 31 "Done when" (pruning): a database of 10^6 snapshots of 100 devices over 30 simulated days with ten
 * finished runs, dry-run and pruned (`pruneSnapshots`, what `POST /api/admin/dut/snapshots/prune` and
 * `deno task prune` run; policy: older than 7 days, one per hour) while a poller writes a round of polls of
 * every device each second through the production poll store and API reads (snapshot listing, change history)
 * run back to back.
 *
 * The history is built with SQL through the `snapshots` view's insert trigger (migration 0017: the narrow row,
 * `payload_changed`, `stable_changed`), so every row is in `snapshot_rows` (a compacted database): two
 * labels per device polled at the same instants; `system_info` changes its payload on every 20th poll, only
 * in a volatile member (stable hash unchanged: not a real change); `ntp_config` changes for real 3 times. Each
 * run lasts an hour: the snapshots of that hour are linked to it; its report (the report fixture with its
 * `snapshots` annex listing them, resealed) and its pre-flight result cite, per device, the last snapshot
 * before its start. Checked, not timed: the dry run's counts equal the prune's; afterwards every report
 * verifies, every cited and linked snapshot is present, the change history of ten devices is unchanged, and
 * polls and API calls saw no error. Reported: dry-run and prune durations, rows per second, bytes freed, the
 * longest batch transaction (the longest any lock of the prune was held) and the API's latency during the
 * prune; then the backup of what is left (`writeBackup`: duration and archive size) and its restore into an
 * empty database of the same backend. `BENCH_PRUNE_SNAPSHOTS` (default 10^6; `--quick`: 10^5) and
 * `BENCH_PRUNE_DAYS` (default 30; `--quick`: 10) size it, `BENCH_PRUNE_OLDER_THAN_DAYS` (default 7; `--quick`:
 * 3) is the policy's age; `BENCH_PRUNE_BACKENDS` (default `postgres`; `postgres,pglite`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { pruneSnapshots } from "../../core/harness/core.ts";
import { listSnapshots } from "../../core/harness/core.ts";
import { listChanges } from "../../core/harness/core.ts";
import { reportFixture } from "../../core/harness/report_fixture.ts";
import { jsonAnnex, sealReport } from "../../core/harness/core.ts";
import { verifyReport } from "../../core/harness/core.ts";
import { readBackup, restoreBackup, writeBackup } from "../../core/harness/core.ts";
import { buildRegistry } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { type Figure, pct, round } from "../_util.ts";
import { type Backend, freshDb } from "../_db.ts";
import { type HashedPoll, storeRound } from "../_store_sql.ts";
import type { Ctx } from "../main.ts";

const DEVICES = 100;
const RUNS = 10;
const VENDOR = "vendor-b-ngfw";
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

async function one(ctx: Ctx, backend: Backend): Promise<Figure[]> {
  const SNAPSHOTS = Number(Deno.env.get("BENCH_PRUNE_SNAPSHOTS") ?? (ctx.quick ? 100_000 : 1_000_000));
  const DAYS = Number(Deno.env.get("BENCH_PRUNE_DAYS") ?? (ctx.quick ? 10 : 30));
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
  const runs = Array.from({ length: RUNS }, (_, r) => {
    const s = new Date(start.getTime() + (2 + r * 2.5) * 86_400_000);
    return { id: crypto.randomUUID(), s, e: new Date(s.getTime() + 3_600_000) };
  });
  const runValues = sql.join(runs.map((r) => sql`(${r.id}::uuid, ${r.s}::timestamptz, ${r.e}::timestamptz)`));
  ctx.log(
    `${backend}: building ${perLabel * 2 * DEVICES} snapshots (${DEVICES} devices, 2 labels, every ${
      stepMs / 1000
    } s)`,
  );
  const t0 = performance.now();
  for (const [i, d] of devices.entries()) {
    await sql`insert into devices (id, hostname, vendor, device_role, base_url, username, password_enc,
        tls_verify_mode, poll_interval_seconds)
      values (${d}, ${`bench-fw-${i}`}, ${VENDOR}, 'ngfw', 'https://192.0.2.1', 'admin', 'x', 'insecure', 60)`
      .execute(k);
    // system_info: {"device":"<i>","uptime":<g/20>}; ntp_config: {"device":"<i>","servers":["10.0.0.<c>"]}.
    const text = sql`case l.k when 0 then '{"device":"' || ${
      String(i)
    } || '","uptime":' || (g / 20)::text || '}'
      else '{"device":"' || ${
      String(i)
    } || '","servers":["10.0.0.' || (g * 4 / ${perLabel}::int)::text || '"]}' end`;
    const rows = sql`from generate_series(0, ${perLabel - 1}::int) g
      cross join (values (0, 'system_info'), (1, 'ntp_config')) l(k, label)`;
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
      select distinct encode(sha256(convert_to(t, 'UTF8')), 'hex'), t, octet_length(t)
      from (select ${text} as t ${rows}) x on conflict do nothing`.execute(k);
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
        test_run_execution_id, adapter_module, adapter_version)
      select ${d}::uuid, l.label, encode(sha256(convert_to(${text}, 'UTF8')), 'hex'),
        case l.k when 0 then ${
      sha(`system_info-${i}`)
    } else encode(sha256(convert_to(${text}, 'UTF8')), 'hex') end,
        ${start}::timestamptz + g * make_interval(secs => ${stepMs / 1000}),
        (select r.id from (values ${runValues}) r(id, s, e)
          where ${start}::timestamptz + g * make_interval(secs => ${stepMs / 1000}) between r.s and r.e),
        '@dutlab/adapter-vendor-b-ngfw', '1.0.0'
      ${rows} order by g, l.k`.execute(k);
    await sql`insert into snapshot_latest (device_id, endpoint_label, snapshot_id)
      select device_id, endpoint_label, last_id from snapshot_series where device_id = ${d}::uuid`.execute(k);
    if (i % 10 === 9) ctx.log(`${backend}: ${i + 1} devices built`);
  }
  const buildS = (performance.now() - t0) / 1000;
  // Ten finished runs: reports citing the linked snapshots and, per device, the last snapshot before start.
  const fixture = await reportFixture();
  const cited = new Set<string>();
  for (const r of runs) {
    const linked =
      (await sql<{ id: string; device_id: string; endpoint_label: string; payload_sha256: string }>`
      select id::text as id, device_id, endpoint_label, payload_sha256 from snapshots
      where test_run_execution_id = ${r.id}::uuid order by snapshots.id`.execute(k)).rows;
    const before = (await sql<{ id: string; payload_sha256: string }>`
      select x.id::text as id, p.sha256 as payload_sha256 from snapshot_series se cross join lateral (
        select s.id, s.payload_id from snapshot_rows s where s.series_id = se.id and s.collected_at < ${r.s}
        order by s.id desc limit 1) x join snapshot_payloads p on p.id = x.payload_id`.execute(k)).rows;
    for (const b of before) cited.add(b.id);
    const preflight = {
      pass: true,
      checks: before.map((b) => ({ evidence: { snapshotId: b.id, payloadSha256: b.payload_sha256 } })),
    };
    const annexes = await Promise.all(
      fixture.annexes.map((a) =>
        a.id === "snapshots"
          ? jsonAnnex(
            a.id,
            a.title,
            linked.map((s) => ({ snapshotId: s.id, payloadSha256: s.payload_sha256 })),
          )
          : a.id === "preflight-at-start"
          ? jsonAnnex(a.id, a.title, preflight)
          : Promise.resolve(a)
      ),
    );
    const { reportSha256: _, ...draft } = fixture;
    const report = await sealReport({ ...draft, meta: { ...draft.meta, executionId: r.id }, annexes });
    await sql`insert into test_runs (execution_id, plan_identifier, plan_display_name, plan_catalog_version,
        plan_json, plan_snapshot_sha256, license_id, status, started_at, ended_at, outcome, start_state_json,
        preflight_json, results_json, report_json, report_sha256)
      values (${r.id}, 'bench', 'bench', 1, ${
      JSON.stringify(report.plan)
    }::jsonb, ${report.meta.planSnapshotSha256},
        'LAB-INTERNAL', 'finished', ${r.s}, ${r.e}, 'passed', '{}'::jsonb, ${
      JSON.stringify(preflight)
    }::jsonb,
        '{}'::jsonb, ${JSON.stringify(report)}, ${report.reportSha256})`.execute(k);
  }
  await sql`analyze`.execute(k);
  const total = Number(
    (await sql<{ n: string }>`select count(*)::text as n from snapshots`.execute(k)).rows[0]!.n,
  );
  const linkedBefore = Number(
    (await sql<
      { n: string }
    >`select count(*)::text as n from snapshots where test_run_execution_id is not null`
      .execute(k)).rows[0]!.n,
  );
  const sizeOf = async () =>
    Number(
      (await sql<{ b: string }>`select (pg_total_relation_size('snapshot_rows') +
      pg_total_relation_size('snapshot_series') + pg_total_relation_size('snapshots_legacy') +
      pg_total_relation_size('snapshot_payloads'))::text as b`.execute(k)).rows[0]!.b,
    );
  const sample = devices.slice(0, 10);
  const changesOf = async () => {
    const out: unknown[] = [];
    for (const d of sample) out.push(await listChanges(k, registry, d, { limit: 100, until: new Date(end) }));
    return JSON.stringify(out);
  };
  const changesBefore = await changesOf();
  ctx.log(`${backend}: built ${total} snapshots in ${round(buildS)} s; dry run`);

  // Load while the dry run and the prune run: polls every second, API reads back to back.
  let running = true;
  const errors: string[] = [];
  const apiMs: number[] = [];
  const pollMs: number[] = [];
  let round_ = 0;
  const poller = (async () => {
    while (running) {
      const t = performance.now();
      round_++;
      const polls: HashedPoll[] = devices.map((d, i) => {
        const sys = `{"device":"${i}","uptime":${1_000_000 + round_}}`;
        const ntp = `{"device":"${i}","servers":["10.0.0.3"]}`; // an old payload, re-used
        return {
          deviceId: d,
          module: `@dutlab/adapter-${VENDOR}`,
          snapshots: [
            { label: "system_info", text: sys, sha256: sha(sys), size: sys.length },
            { label: "ntp_config", text: ntp, sha256: sha(ntp), size: ntp.length },
          ],
        };
      });
      try {
        await storeRound(k, registry, polls);
      } catch (e) {
        errors.push(`poll: ${(e as Error).message}`);
      }
      pollMs.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (performance.now() - t))));
    }
  })();
  const api = (async () => {
    let n = 0;
    while (running) {
      const d = devices[n++ % DEVICES]!;
      const t = performance.now();
      try {
        if (n % 2) await listSnapshots(k, { deviceId: d, limit: 20 });
        else await listChanges(k, registry, d, { limit: 20 });
      } catch (e) {
        errors.push(`api: ${(e as Error).message}`);
      }
      apiMs.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const policy = {
    olderThanDays: Number(Deno.env.get("BENCH_PRUNE_OLDER_THAN_DAYS") ?? (ctx.quick ? 3 : 7)),
    keepOnePer: "hour" as const,
  };
  // The API's latency with the poller but no prune (what the figures during the prune compare with).
  await new Promise((r) => setTimeout(r, 1000));
  const apiBefore = apiMs.slice();
  const td = performance.now();
  const dry = await pruneSnapshots(k, { ...policy, dryRun: true, actor: "bench" });
  const dryS = (performance.now() - td) / 1000;
  const bytesBefore = await sizeOf();
  ctx.log(
    `${backend}: dry run ${round(dryS)} s: ${dry.snapshots} snapshot(s), ${dry.payloads} payload(s); prune`,
  );
  const apiFrom = apiMs.length;
  const tp = performance.now();
  let lastLog = 0;
  const real = await pruneSnapshots(k, {
    ...policy,
    dryRun: false,
    actor: "bench",
    onProgress: (p) => {
      if (performance.now() - lastLog < 10_000) return;
      lastLog = performance.now();
      ctx.log(`${backend}: prune batch ${p.batches}, id ${p.cursorId}/${p.endId}, ${p.snapshots} deleted`);
    },
  });
  const pruneS = (performance.now() - tp) / 1000;
  const apiDuring = apiMs.slice(apiFrom);
  running = false;
  await Promise.all([poller, api]);

  // Checks.
  const problems: string[] = [];
  if (real.snapshots !== dry.snapshots || JSON.stringify(real.counts) !== JSON.stringify(dry.counts)) {
    problems.push(`dry run counted ${dry.snapshots}, the prune deleted ${real.snapshots}`);
  }
  if (real.payloads !== dry.payloads || real.payloadBytes !== dry.payloadBytes) {
    problems.push(
      `dry run: ${dry.payloads} payloads ${dry.payloadBytes} B; prune: ${real.payloads} ${real.payloadBytes} B`,
    );
  }
  for (const r of (await k.selectFrom("test_runs").select("report_json").execute())) {
    if (!(await verifyReport(JSON.parse(r.report_json!))).ok) problems.push("a report does not verify");
  }
  const present = new Set((await sql<{ id: string }>`select id::text as id from snapshots
    where id = any(${[...cited]}::bigint[])`.execute(k)).rows.map((r) => r.id));
  if (present.size !== cited.size) problems.push(`${cited.size - present.size} cited snapshot(s) missing`);
  const linkedAfter = Number(
    (await sql<
      { n: string }
    >`select count(*)::text as n from snapshots where test_run_execution_id is not null
      and collected_at < ${new Date(end)}`.execute(k)).rows[0]!.n,
  );
  if (linkedAfter !== linkedBefore) {
    problems.push(`linked snapshots: ${linkedBefore} before, ${linkedAfter} after`);
  }
  if (await changesOf() !== changesBefore) problems.push("the change history of a device changed");
  if (errors.length) {
    problems.push(`${errors.length} error(s) during the prune: ${errors.slice(0, 3).join("; ")}`);
  }
  if (problems.length) throw new Error(`prune ${backend}: ${problems.join("; ")}`);
  await sql`vacuum snapshot_rows, snapshot_payloads`.execute(k).catch(() => {});
  const bytesAfter = await sizeOf();
  // The backup of what is left (what `deno task backup` and GET /api/admin/backup write): one read transaction,
  // on PGlite the time the service answers nothing else.
  const tb = performance.now();
  const { archive, manifest } = await writeBackup(k, db.kind);
  const backupS = (performance.now() - tb) / 1000;
  const backupRows = manifest.tables.reduce((n, t) => n + t.rows, 0);
  // ... and its restore into an empty database of the same backend (checks, load, re-hash, report verification).
  await using target = await freshDb(backend);
  const tr = performance.now();
  const restored = await restoreBackup(target.kysely, await readBackup(archive), {
    checkCredential: () => Promise.resolve(), // the bench's devices have no real credential
  });
  const restoreS = (performance.now() - tr) / 1000;
  if (restored.reportsVerified !== RUNS) {
    throw new Error(`restore verified ${restored.reportsVerified} reports`);
  }

  const params = {
    backend,
    snapshots: total,
    devices: DEVICES,
    days: DAYS,
    runs: RUNS,
    policy,
    batchSize: 2000,
  };
  const fig = (name: string, value: number, unit: string, extra: Partial<Figure> = {}): Figure => ({
    scenario: "prune",
    name,
    value,
    unit,
    params,
    command: ctx.command,
    ...extra,
  });
  return [
    fig("buildSeconds", round(buildS), "s", { note: "not a figure of the prune: building the database" }),
    fig("dryRunSeconds", round(dryS, 2), "s"),
    fig("pruneSeconds", round(pruneS, 2), "s"),
    fig("deletedSnapshots", real.snapshots, "rows", {
      note: `of ${total}; dry run counted ${dry.snapshots}`,
    }),
    fig("deletedRowsPerSecond", round(real.snapshots / pruneS), "rows/s"),
    fig("freedPayloads", real.payloads, "rows"),
    fig("bytesFreedReported", real.bytes, "B", {
      note: "row sizes of deleted snapshots + freed payload text",
    }),
    fig("relationBytesBefore", bytesBefore, "B", {
      note: "pg_total_relation_size(snapshot_rows + snapshot_series + snapshots_legacy + snapshot_payloads)",
    }),
    fig("relationBytesAfterVacuum", bytesAfter, "B", {
      note: "plain VACUUM keeps the files' size: freed space is reused by new rows",
    }),
    fig("longestBatchMs", real.longestBatchMs, "ms", { note: `${real.batches} batches` }),
    fig("apiP50DuringPruneMs", round(pct(apiDuring, 50)), "ms", {
      params: { ...params, calls: apiDuring.length },
    }),
    fig("apiP99DuringPruneMs", round(pct(apiDuring, 99)), "ms"),
    fig("apiMaxDuringPruneMs", round(Math.max(...apiDuring)), "ms"),
    fig("apiP50BeforePruneMs", round(pct(apiBefore, 50)), "ms", {
      note: `${apiBefore.length} calls in the second before the dry run (polls running, no prune)`,
    }),
    fig("pollRoundMaxMs", round(Math.max(...pollMs)), "ms", {
      note: `${pollMs.length} rounds of ${DEVICES} polls`,
    }),
    fig("errorsDuringPrune", errors.length, "count", { target: "0", pass: errors.length === 0 }),
    fig("backupSeconds", round(backupS, 2), "s", {
      note: `${backupRows} rows after the prune, one transaction`,
    }),
    fig("backupArchiveBytes", archive.length, "B", { note: "tar.gz" }),
    fig("restoreSeconds", round(restoreS, 2), "s", {
      note:
        `${backupRows} rows, ${restored.payloadsRehashed} payloads re-hashed, ${restored.reportsVerified} reports verified`,
    }),
  ];
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const backends = (Deno.env.get("BENCH_PRUNE_BACKENDS")?.split(",") ?? ["postgres"]) as Backend[];
  const out: Figure[] = [];
  for (const b of backends) out.push(...await one(ctx, b));
  return out;
}
