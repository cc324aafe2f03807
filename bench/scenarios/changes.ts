/**
 * Issue 22 point 6: the change history of a device with 10^6 snapshots (`listChanges`, what
 * `GET /api/admin/dut/devices/{id}/changes` answers). One firewall (`vendor-a-ngfw`), two labels polled
 * alternately; `ntp_config` changes `CHANGES` times, evenly spread, so the first page has to reach back to the
 * oldest change (the worst case for a reader that walks the polls). Two cases, each in a fresh database:
 * - `steady`: `system_info` never changes (every poll repeats its hash);
 * - `volatile`: `system_info` changes on every poll, but only in `/systemUptime`, one of the adapter's
 *   volatile paths: 5 * 10^5 hash changes (and payloads) that are not changes.
 * Rows are inserted with generate_series through the real insert trigger (`payload_changed`,
 * `stable_changed`), each with the stable hash the poll cycle would write (`hashSnapshot` with the adapter's
 * patterns). Timed, without `?label=`: the first page (default limit 20: every change) and a later page
 * (limit 2, the third page, through the cursor), on PostgreSQL and on PGlite; in the volatile case, once
 * afterwards, what an adapter upgrade that drops a volatile path costs (`afterPatternChange`). `BENCH_CHANGES_BACKENDS` and
 * `BENCH_CHANGES_CASES` (comma-separated) run a subset; `BENCH_CHANGES_SNAPSHOTS` changes the row count (a smoke
 * run of the scenario itself, not a figure of issue 22).
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../../core/harness/core.ts";
import { reconcilePatternSets } from "../../core/harness/core.ts";
import { remarkAll } from "../../core/harness/core.ts";
import { listChanges } from "../../core/harness/core.ts";
import { hashSnapshot } from "../../core/harness/core.ts";
import { patternSetKey, volatileFor } from "../../core/harness/core.ts";
import { canonicalJson } from "../../core/harness/core.ts";
import { buildRegistry, type Registry } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { type Figure, pct, round } from "../_util.ts";
import { type Backend, freshDb } from "../_db.ts";
import type { Ctx } from "../main.ts";

const SNAPSHOTS = Number(Deno.env.get("BENCH_CHANGES_SNAPSHOTS") ?? 1_000_000); // smaller: a smoke run
const CHANGES = 6;
const DEVICE = "7d0c1a52-5a1e-4f0b-9c3e-0d9b6c2a1e01";
const VENDOR = "vendor-a-ngfw";

type Case = "steady" | "volatile";

/** The canonical JSON of the `system_info` payload of poll `g` (SQL builds the same text for every row). */
const SYSTEM_FIXED = { hostname: "bench-fw-1", model: "FX-4200", softwareVersion: "7.4.1" };
const systemInfo = (uptime: number) => ({ ...SYSTEM_FIXED, systemUptime: uptime });

async function one(ctx: Ctx, backend: Backend, kind: Case): Promise<Figure[]> {
  await using db = await freshDb(backend);
  const k = db.kysely;
  const registry = buildRegistry(modules);
  const patterns = volatileFor(registry, VENDOR, "system_info");
  if (kind === "volatile" && !patterns.includes("/systemUptime")) {
    throw new Error(
      `${VENDOR} system_info no longer declares /systemUptime volatile: [${patterns.join(", ")}]`,
    );
  }
  await sql`insert into devices (id, hostname, vendor, device_role, base_url, username, password_enc,
      tls_verify_mode, poll_interval_seconds)
    values (${DEVICE}, 'bench-fw-1', ${VENDOR}, 'ngfw', 'https://192.0.2.1', 'admin', 'x', 'insecure', 60)`
    .execute(k);
  // As the poll cycle hashes a payload, stable hash included.
  const stable = (label: string, payload: unknown) =>
    hashSnapshot(label, payload, volatileFor(registry, VENDOR, label));
  // CHANGES + 1 NTP payloads (one server list each); system_info: one payload (steady) or one per poll.
  const ntp = await Promise.all(
    Array.from(
      { length: CHANGES + 1 },
      (_, i) => stable("ntp_config", { servers: [`10.0.0.${i + 1}`, "10.0.1.1"] }),
    ),
  );
  const sys = await stable("system_info", systemInfo(0)); // volatile: every poll's stable hash is this one's
  const sysStable = sys.stableSha256!; // computed: the patterns are given
  for (const t of [...ntp, sys]) {
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
      values (${t.sha256}, ${t.text}, ${new TextEncoder().encode(t.text).length}) on conflict do nothing`
      .execute(k);
  }
  const arr = (xs: string[]) => sql.raw(`array[${xs.map((x) => `'${x}'`).join(",")}]`);
  // The system_info text of poll g, built by SQL: checked below against canonicalJson and sha256Hex.
  const fixed = canonicalJson(SYSTEM_FIXED).slice(0, -1);
  const sysText = (g: ReturnType<typeof sql>) =>
    sql`${fixed} || ',"systemUptime":' || (${g} * 30)::text || '}'`;
  const sysSha = (g: ReturnType<typeof sql>) => sql`encode(sha256(convert_to(${sysText(g)}, 'UTF8')), 'hex')`;
  if (kind === "volatile") {
    const probe = (await sql<{ t: string; h: string }>`select ${sysText(sql`7`)} as t, ${sysSha(sql`7`)} as h`
      .execute(k)).rows[0]!; // one row
    const want = await stable("system_info", systemInfo(7 * 30));
    if (probe.t !== want.text || probe.h !== want.sha256 || want.stableSha256 !== sys.stableSha256) {
      throw new Error(`SQL system_info payloads differ from the poll cycle's: ${JSON.stringify(probe)}`);
    }
  }
  const t0 = performance.now();
  // Odd polls: ntp_config, its payload index stepping every SNAPSHOTS / (CHANGES + 1) rows; even: system_info.
  // Small statements: through the view's INSTEAD OF INSERT trigger (migration 0017) every row updates its
  // series' row in snapshot_series, and within one statement those versions pile up on one HOT chain that
  // each later row walks, so a statement's cost grows with the square of its rows per series (one statement
  // of 10^5 rows did not finish in 12 minutes; 2,000 rows per statement stay linear).
  const batch = 2_000;
  for (let from = 1; from <= SNAPSHOTS; from += batch) {
    const to = Math.min(SNAPSHOTS, from + batch - 1);
    if (kind === "volatile") {
      await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
        select ${sysSha(sql`g`)}, ${sysText(sql`g`)}, octet_length(${sysText(sql`g`)})
        from generate_series(${from}::int, ${to}::int) g where g % 2 = 0`.execute(k);
    }
    const ntpIndex = sql`1 + ((g - 1) * ${CHANGES + 1}) / ${SNAPSHOTS}`;
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
        adapter_module, adapter_version)
      select ${DEVICE}::uuid,
        case when g % 2 = 1 then 'ntp_config' else 'system_info' end,
        case when g % 2 = 1 then (${arr(ntp.map((t) => t.sha256))})[${ntpIndex}]
          else ${kind === "volatile" ? sysSha(sql`g`) : sql`${sys.sha256}`} end,
        case when g % 2 = 1 then (${arr(ntp.map((t) => t.stableSha256!))})[${ntpIndex}] else ${sysStable} end,
        timestamptz '2026-01-01' + g * interval '30 seconds',
        '@dutlab/adapter-vendor-a-ngfw', '1.0.0'
      from generate_series(${from}::int, ${to}::int) g`.execute(k);
  }
  await sql`analyze snapshot_rows`.execute(k);
  await sql`analyze snapshot_series`.execute(k);
  await sql`analyze snapshot_payloads`.execute(k);
  const hashChanges = (await sql<{ n: string }>`select count(*)::text as n from snapshots
    where device_id = ${DEVICE} and payload_changed`.execute(k)).rows[0]!.n; // one row
  ctx.log(
    `${backend} ${kind}: ${SNAPSHOTS} snapshots (${hashChanges} hash changes) inserted in ${
      round((performance.now() - t0) / 1000)
    } s`,
  );

  // The rows a page walks: the plan of listChanges' candidate scan (its lateral join and filters aside).
  const plan = await sql<{ "QUERY PLAN": string }>`explain select r.id from snapshot_rows r
    where r.series_id = (select se.id from snapshot_series se where se.device_id = ${DEVICE}
      and se.endpoint_label = 'system_info') and r.payload_changed and r.stable_changed is not false
    order by r.id desc limit 500`.execute(k);
  ctx.log(`${backend} ${kind}: candidate scan: ${plan.rows.map((r) => r["QUERY PLAN"].trim()).join(" | ")}`);

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
    `${backend} ${kind}: first page p50 ${round(pct(first, 50))} ms, third page p50 ${
      round(pct(later, 50))
    } ms`,
  );
  const params = {
    backend,
    case: kind,
    snapshots: SNAPSHOTS,
    labels: 2,
    changes: CHANGES,
    hashChanges: Number(hashChanges),
    iterations,
  };
  const rows = SNAPSHOTS === 1_000_000 ? "10^6" : String(SNAPSHOTS);
  const what = kind === "volatile" ? `${rows} snapshots, uptime moving every poll` : `${rows} snapshots`;
  const figures: Figure[] = [];
  if (kind === "volatile") figures.push(...await afterPatternChange(ctx, k, registry, backend, params));
  return [
    ...figures,
    ...[50, 95].map((p) => ({
      scenario: "changes",
      name: `change history of ${what}, first page (limit 20), ${backend}, p${p}`,
      value: round(pct(first, p)),
      unit: "ms",
      params,
      target: "≤ 100 ms",
      pass: pct(first, p) <= 100,
      command: ctx.command,
    })),
    ...[50, 95].map((p) => ({
      scenario: "changes",
      name: `change history of ${what}, third page (limit 2, cursor), ${backend}, p${p}`,
      value: round(pct(later, p)),
      unit: "ms",
      params,
      target: "≤ 100 ms",
      pass: pct(later, p) <= 100,
      command: ctx.command,
    })),
  ];
}

/**
 * What an adapter upgrade that drops a volatile path of `system_info` costs (once, after the timed pages): the
 * start-up reconciliation forgets the 5 * 10^5 `false` flags of that label, and the first page reads and
 * compares those rows again, as before the stable marker. Every other label's set is recorded as current, so
 * only this one is reconciled.
 */
async function afterPatternChange(
  ctx: Ctx,
  k: Kysely<Database>,
  registry: Registry,
  backend: Backend,
  params: Record<string, unknown>,
): Promise<Figure[]> {
  for (const [vendor, reg] of registry.adapters) {
    for (const label of reg.adapter.labels) {
      const now = volatileFor(registry, vendor, label);
      const recorded = vendor === VENDOR && label === "system_info" ? [...now, "/benchDroppedPath"] : now;
      await k.insertInto("volatile_path_sets")
        .values({ vendor, endpoint_label: label, patterns: patternSetKey(recorded) }).execute();
    }
  }
  let t = performance.now();
  const changed = await reconcilePatternSets(k, registry);
  const reconcileMs = performance.now() - t;
  const pending = changed.filter((c) => c.remarkBelow !== null).length;
  // Right after start-up: the re-mark has not run, the label's older rows are compared in full, a bounded
  // number per page (a page may hold fewer changes, with a cursor); then every page to the end.
  t = performance.now();
  const r = await listChanges(k, registry, DEVICE, { limit: 20 });
  const pageMs = performance.now() - t;
  if (!("changes" in r) || !r.remarking?.length) {
    throw new Error(`listChanges: no remarking reported while the re-mark is pending: ${JSON.stringify(r)}`);
  }
  let seen = r.changes.length, pages = 1, cursor = r.nextCursor;
  while (cursor) {
    const p = await listChanges(k, registry, DEVICE, { limit: 20, cursor });
    if (!("changes" in p)) throw new Error(`listChanges: ${JSON.stringify(p)}`);
    seen += p.changes.length;
    pages++;
    cursor = p.nextCursor;
  }
  const allPagesMs = performance.now() - t;
  if (seen !== CHANGES) throw new Error(`listChanges while re-marking: ${seen} changes, not ${CHANGES}`);
  // The background job, run here to the end (what `serve` runs after start-up, without its pauses).
  t = performance.now();
  const steps = await remarkAll(k, registry);
  const remarkMs = performance.now() - t;
  const compared = steps.reduce((n, s) => n + s.compared, 0);
  const forgotten = steps.reduce((n, s) => n + s.forgotten, 0);
  const after: number[] = [];
  for (let i = 0; i < 7; i++) {
    t = performance.now();
    const a = await listChanges(k, registry, DEVICE, { limit: 20 });
    if (i >= 2) after.push(performance.now() - t); // two warm-up rounds
    if (!("changes" in a) || a.changes.length !== CHANGES || a.remarking) {
      throw new Error(`listChanges after the re-mark: ${JSON.stringify(a)}`);
    }
  }
  ctx.log(
    `${backend} volatile: a dropped volatile path: start-up records it in ${
      round(reconcileMs)
    } ms (${pending} ` +
      `label(s) to re-mark); the first page right after takes ${
        round(pageMs)
      } ms (rows compared in full); the ` +
      `re-mark compares ${compared} rows (${forgotten} flags forgotten) in ${
        round(remarkMs)
      } ms; the first ` +
      `page after it p50 ${round(pct(after, 50))} ms`,
  );
  const note = "once: the cost of an adapter upgrade that drops a volatile path (issue 34 point 6)";
  const fig = (name: string, value: number, extra: Partial<Figure> = {}): Figure => ({
    scenario: "changes",
    name: `${name}, ${backend}`,
    value: round(value),
    unit: "ms",
    params: { ...params, remarkCompared: compared, remarkForgotten: forgotten },
    note,
    command: ctx.command,
    ...extra,
  });
  return [
    fig(
      "start-up reconciliation after a dropped volatile path (recorded, re-mark in the background)",
      reconcileMs,
      {
        target: "start-up not held up",
      },
    ),
    fig(
      "change history first page right after that start-up (re-mark pending: a bounded read, rows compared in full)",
      pageMs,
      {
        target: "≤ 100 ms",
        pass: pageMs <= 100,
      },
    ),
    fig(
      "every change right after that start-up, following the cursors (re-mark pending)",
      allPagesMs,
      { params: { ...params, remarkCompared: compared, remarkForgotten: forgotten, pages } },
    ),
    fig(`background re-mark of ${compared} rows to the end`, remarkMs),
    fig("change history first page once re-marked, p50", pct(after, 50), {
      target: "≤ 100 ms",
      pass: pct(after, 50) <= 100,
    }),
  ];
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const only = Deno.env.get("BENCH_CHANGES_BACKENDS")?.split(",") as Backend[] | undefined;
  const cases = Deno.env.get("BENCH_CHANGES_CASES")?.split(",") as Case[] | undefined;
  const out: Figure[] = [];
  for (const kind of cases ?? ["steady", "volatile"] as Case[]) {
    for (const b of only ?? ["postgres", "pglite"] as Backend[]) out.push(...await one(ctx, b, kind));
  }
  return out;
}
