import { type Kysely, type Selectable, sql } from "kysely";
import type { Database, TestRunsTable } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import { canonicalJson, jcsSha256 } from "../hash.ts";
import { problems } from "../http/problem.ts";
import { type PreflightResult, runPreflight } from "../preflight.ts";
import { latestSnapshots } from "../snapshots.ts";
import { decryptStateOf, type StartState } from "./alerts.ts";
import {
  type Aggregate,
  aggregateK6,
  aggregateSamples,
  budgetBurnedPct,
  type K6Trend,
  shareAbove,
  shareAboveK6,
} from "./aggregate.ts";
import { jsonAnnex, licenseTexts, sealReport } from "../report/build.ts";
import type { DecryptAlert, ReportData } from "../report/types.ts";
import { isUniqueViolation } from "../devices.ts";

/** A run as the API shows it. */
export interface RunView {
  runId: string;
  executionId: string;
  planIdentifier: string;
  planDisplayName: string;
  planCatalogVersion: number;
  planSnapshotSha256: string;
  licenseId: string;
  notes: string | null;
  status: "active" | "finished";
  startedAt: string;
  endedAt: string | null;
  outcome: string | null;
  preflightAtStart: { pass: boolean; summary: string };
  alerts: DecryptAlert[];
  reportSha256: string | null;
}

export type RunResults =
  | { latencySamplesMs: number[] }
  | { k6Summary: { metrics: Record<string, unknown> } };

const FIREWALL_LABEL = "decrypt_policy";
const BMC_ROLE = "bmc";

function overall(states: Array<"on" | "off" | "unknown">): "on" | "off" | "unknown" {
  const known = states.filter((s) => s !== "unknown");
  if (!known.length) return "unknown";
  return known.includes("on") ? "on" : "off";
}

/** Test runs: start (plan frozen, lab state and pre-flight recorded), finish (report built and frozen once). */
export class RunService {
  constructor(private db: Kysely<Database>, private registry: Registry, private defaultLicense: string) {}

  async #labState(): Promise<StartState> {
    const devices = await this.db.selectFrom("devices").select(["id", "hostname", "vendor", "device_role"])
      .where("enabled", "=", true).orderBy("hostname").execute();
    const latest = await latestSnapshots(this.db, devices.map((d) => d.id));
    const decrypt: StartState["decrypt"] = {};
    for (const d of devices) {
      if (!this.registry.adapters.get(d.vendor)?.adapter.labels.includes(FIREWALL_LABEL)) continue;
      const s = latest.find((x) => x.device_id === d.id && x.endpoint_label === FIREWALL_LABEL);
      const state = s ? decryptStateOf(this.registry, d.vendor, JSON.parse(s.payload)) : "unknown";
      const f = this.registry.adapters.get(d.vendor)?.adapter.facts?.decryptRuleCount;
      let ruleCount: number | null = null;
      try {
        ruleCount = s && f ? f(JSON.parse(s.payload)) : null;
      } catch { /* unknown */ }
      decrypt[d.id] = { state, snapshotId: s?.id ?? null, ruleCount };
    }
    return {
      devices: devices.map((d) => ({
        id: d.id,
        hostname: d.hostname,
        vendor: d.vendor,
        deviceRole: d.device_role,
      })),
      decrypt,
    };
  }

  async start(
    input: { planIdentifier: string; licenseId?: string; notes?: string | null },
  ): Promise<RunView> {
    const plan = this.registry.plan(input.planIdentifier);
    if (!plan) throw problems.notFound(`No plan with identifier "${input.planIdentifier}"`);
    const active = await this.db.selectFrom("test_runs").select("execution_id").where("status", "=", "active")
      .executeTakeFirst();
    if (active) {
      throw problems.conflict(`Run ${active.execution_id} is active; finish it before starting another`, {
        activeExecutionId: active.execution_id,
      });
    }
    const frozen: Plan = JSON.parse(canonicalJson(plan));
    const preflight = await runPreflight(this.db, this.registry, frozen);
    const state = await this.#labState();
    const executionId = crypto.randomUUID();
    try {
      await this.db.insertInto("test_runs").values({
        execution_id: executionId,
        plan_identifier: plan.identifier,
        plan_display_name: plan.displayName,
        plan_catalog_version: this.registry.planCatalog.catalogVersion,
        plan_json: canonicalJson(frozen),
        plan_snapshot_sha256: await jcsSha256(frozen),
        license_id: input.licenseId ?? this.defaultLicense,
        notes: input.notes ?? null,
        status: "active",
        started_at: new Date(),
        start_state_json: canonicalJson(state),
        preflight_json: canonicalJson(preflight),
      }).execute();
    } catch (e) {
      if (isUniqueViolation(e)) throw problems.conflict("Another run was started at the same moment");
      throw e;
    }
    return await this.get(executionId);
  }

  async #row(executionId: string) {
    const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(executionId);
    const row = isUuid
      ? await this.db.selectFrom("test_runs").selectAll().select(sql<string>`run_id::text`.as("run_id"))
        .where("execution_id", "=", executionId).executeTakeFirst()
      : undefined;
    if (!row) throw problems.notFound(`No test run with executionId "${executionId}"`);
    return row;
  }

  async #alerts(executionId: string): Promise<DecryptAlert[]> {
    const rows = await this.db.selectFrom("run_alerts").selectAll().select(
      sql<string>`snapshot_id::text`.as("snapshot_id"),
    )
      .where("execution_id", "=", executionId).orderBy("id").execute();
    return rows.map((a) => ({
      name: "TLSDecryptModeChanged",
      at: new Date(a.at).toISOString(),
      deviceId: a.device_id,
      deviceHostname: a.device_hostname,
      from: a.from_state as "on" | "off",
      to: a.to_state as "on" | "off",
      snapshotId: a.snapshot_id,
    }));
  }

  async get(executionId: string): Promise<RunView> {
    const r = await this.#row(executionId);
    return this.#view(r, await this.#alerts(r.execution_id));
  }

  #view(r: RunRow, alerts: DecryptAlert[]): RunView {
    const pf = toObj<PreflightResult>(r.preflight_json);
    return {
      runId: String(r.run_id),
      executionId: r.execution_id,
      planIdentifier: r.plan_identifier,
      planDisplayName: r.plan_display_name,
      planCatalogVersion: r.plan_catalog_version,
      planSnapshotSha256: r.plan_snapshot_sha256,
      licenseId: r.license_id,
      notes: r.notes,
      status: r.status as "active" | "finished",
      startedAt: new Date(r.started_at).toISOString(),
      endedAt: r.ended_at ? new Date(r.ended_at).toISOString() : null,
      outcome: r.outcome,
      preflightAtStart: { pass: pf.pass, summary: pf.summary },
      alerts,
      reportSha256: r.report_sha256,
    };
  }

  async list(limit = 100): Promise<RunView[]> {
    const rows = await this.db.selectFrom("test_runs").selectAll().select(
      sql<string>`run_id::text`.as("run_id"),
    )
      .orderBy("started_at", "desc").orderBy("run_id", "desc").limit(limit).execute();
    const out: RunView[] = [];
    for (const r of rows) out.push(this.#view(r, await this.#alerts(r.execution_id)));
    return out;
  }

  /** Finish the active run: aggregate results, build the report once and freeze it. */
  async finish(executionId: string, input: { outcome: string; results: RunResults }): Promise<RunView> {
    const r = await this.#row(executionId);
    if (r.status !== "active") throw problems.conflict(`Run ${executionId} is already finished`);
    const plan = toObj<Plan>(r.plan_json);
    let aggregate: Aggregate;
    let slower: number;
    let source: ReportData["results"]["source"];
    if ("latencySamplesMs" in input.results) {
      aggregate = aggregateSamples(input.results.latencySamplesMs);
      slower = shareAbove(input.results.latencySamplesMs, plan.sloTargetP99Ms);
      source = "latencySamplesMs";
    } else {
      const m = input.results.k6Summary.metrics;
      const trend = m.http_req_duration as K6Trend;
      aggregate = aggregateK6(trend, Math.round((m.http_reqs as { count?: number } | undefined)?.count ?? 0));
      slower = shareAboveK6(trend, plan.sloTargetP99Ms);
      source = "k6-summary";
    }
    const endedAt = new Date();
    const startState = toObj<StartState>(r.start_state_json);
    const endState = await this.#labState();
    const alerts = await this.#alerts(executionId);
    const invalidated = alerts.length > 0;
    const latencyOk = aggregate.p99_ms <= plan.sloTargetP99Ms;
    const snapshots = await this.db.selectFrom("snapshots as s").innerJoin(
      "devices as d",
      "d.id",
      "s.device_id",
    )
      .select([
        sql<string>`s.id::text`.as("id"),
        "s.device_id",
        "d.hostname",
        "s.endpoint_label",
        "s.payload_sha256",
        "s.collected_at",
      ])
      .where("s.test_run_execution_id", "=", executionId).orderBy("s.id").execute();
    const startedAt = new Date(r.started_at);
    const draft: Omit<ReportData, "reportSha256"> = {
      version: 1,
      generatedAt: endedAt.toISOString(),
      meta: {
        runId: String(r.run_id),
        executionId,
        planIdentifier: r.plan_identifier,
        planDisplayName: r.plan_display_name,
        planCatalogVersion: r.plan_catalog_version,
        planSnapshotSha256: r.plan_snapshot_sha256,
        durationS: Math.round((endedAt.getTime() - startedAt.getTime()) / 1000),
        startedAt: startedAt.toISOString(),
        endedAt: endedAt.toISOString(),
        outcome: input.outcome,
        notes: r.notes,
      },
      license: licenseTexts(r.license_id),
      plan,
      topology: {
        deploymentMode: plan.deploymentMode,
        ucsCount: startState.devices.filter((d) => d.deviceRole === BMC_ROLE).length,
        devices: startState.devices,
      },
      tlsDecrypt: {
        required: plan.tlsDecrypt,
        activeAtStart: overall(Object.values(startState.decrypt).map((d) => d.state)),
        activeAtEnd: overall(Object.values(endState.decrypt).map((d) => d.state)),
        alerts,
        resultsInvalidated: invalidated,
      },
      results: { source, aggregate },
      slo: {
        targetP99Ms: plan.sloTargetP99Ms,
        observedP99Ms: aggregate.p99_ms,
        pass: latencyOk && !invalidated,
        errorBudgetBurnedPct: budgetBurnedPct(slower),
        verdictNote: invalidated
          ? `Results invalidated: TLS decryption changed during the run (${
            alerts.map((a) => `${a.deviceHostname} ${a.from}→${a.to} at ${a.at}`).join("; ")
          })`
          : null,
      },
      annexes: [
        await jsonAnnex("A1", "Pre-flight result at run start", toObj(r.preflight_json)),
        await jsonAnnex("A2", "Lab state at run start", startState),
        await jsonAnnex(
          "A3",
          "Snapshots collected during the run",
          snapshots.map((s) => ({
            snapshotId: s.id,
            deviceId: s.device_id,
            deviceHostname: s.hostname,
            endpointLabel: s.endpoint_label,
            payloadSha256: s.payload_sha256,
            collectedAt: new Date(s.collected_at).toISOString(),
          })),
        ),
        await jsonAnnex("A4", "TLSDecryptModeChanged alerts", alerts),
      ],
    };
    const report = await sealReport(draft);
    const text = JSON.stringify(report, null, 2) + "\n";
    const done = await this.db.updateTable("test_runs").set({
      status: "finished",
      ended_at: endedAt,
      outcome: input.outcome,
      results_json: canonicalJson(input.results),
      report_json: text,
      report_sha256: report.reportSha256,
    }).where("execution_id", "=", executionId).where("status", "=", "active").executeTakeFirst();
    if (Number(done.numUpdatedRows) !== 1) throw problems.conflict(`Run ${executionId} is already finished`);
    return await this.get(executionId);
  }

  /** The frozen report bytes, or 404 for an unknown or unfinished run. */
  async report(executionId: string): Promise<{ text: string; sha256: string; licenseId: string }> {
    const r = await this.#row(executionId);
    if (!r.report_json || !r.report_sha256) {
      throw problems.notFound(`Run ${executionId} has not finished; its report does not exist yet`);
    }
    return { text: r.report_json, sha256: r.report_sha256, licenseId: r.license_id };
  }
}

type RunRow = Omit<Selectable<TestRunsTable>, "run_id"> & { run_id: string };

function toObj<T>(v: unknown): T {
  return (typeof v === "string" ? JSON.parse(v) : v) as T;
}
