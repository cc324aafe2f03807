import { type Kysely, type Selectable, sql } from "kysely";
import type { Database, TestRunsTable } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import { canonicalJson, jcsSha256 } from "../util/hash.ts";
import { ConflictError, DomainError, InvalidInputError, NotFoundError } from "../errors.ts";
import { preflightOf, type PreflightResult } from "../preflight/engine.ts";
import { readLab } from "../lab/read.ts";
import { labStateOf, labStateWants, type StartState } from "../lab/state.ts";
import { assembleReport, labDecryptState } from "../report/assemble.ts";
import type { DecryptAlert, ReportData, StartGate, VerdictReason, VerdictValue } from "../report/types.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { isUuid } from "../util/ids.ts";
import { jsonValue } from "../db/json.ts";
import type { FinishRunInput, StartRunInput } from "../api/schemas.ts";
import { decodeCursor, encodeCursor } from "../util/paging.ts";
import { netboxJournalQueued, preflightFailed, runFinished } from "./notify.ts";

/** A run as the API shows it. */
/** Filters and paging of the run list (docs/http-api.md "Reads, paging and filters"). */
export interface RunFilter {
  status?: "active" | "finished";
  planIdentifier?: string;
  from?: Date;
  to?: Date;
  limit?: number;
  cursor?: string;
}

export interface RunView {
  runId: string;
  executionId: string;
  planIdentifier: string;
  planDisplayName: string;
  planCatalogVersion: number;
  planSnapshotSha256: string;
  licenseId: string;
  /** The customer (licensee) named at start, or null. */
  customer: string | null;
  /** The lab that ran the test (`DUT_LAB_NAME` at start); null for runs started before it was recorded. */
  labName: string | null;
  notes: string | null;
  status: "active" | "finished";
  startedAt: string;
  endedAt: string | null;
  outcome: string | null;
  /** The pre-flight result evaluated at start (the full result is annex `preflight-at-start`). */
  preflightAtStart: {
    pass: boolean;
    summary: string;
    checksRun: number;
    checksPassed: number;
    checksFailed: number;
    checksSkipped: number;
  };
  /** Enabled devices and the firewalls' TLS-decrypt state when the run started. */
  labAtStart: StartState & { tlsDecrypt: "on" | "off" | "mixed" | "unknown" };
  alerts: DecryptAlert[];
  reportSha256: string | null;
  /** The frozen report's verdict; null while active or for reports frozen before verdicts existed. */
  verdict: { value: VerdictValue; reasons: VerdictReason[] } | null;
  /** How the start was gated on pre-flight; null for runs started before gating existed (ungated). */
  startGate: StartGate | null;
}

/** Who starts a run (the token's name and role), recorded with an override of the start gate. */
export interface StartActor {
  name: string;
  role: string;
}

/**
 * A gated start whose pre-flight did not pass, without an override: nothing was started. The HTTP layer
 * answers 422 with `preflight` as the body (docs/runs.md "Gating the start").
 */
export class StartGateRefused extends DomainError {
  override name = "StartGateRefused";
  constructor(readonly preflight: PreflightResult, readonly source: "plan" | "request") {
    super(
      `The ${
        source === "plan" ? "plan's start gate" : "request"
      } requires a passing pre-flight: ${preflight.summary}`,
    );
  }
}

const preflightSummary = (pf: PreflightResult): RunView["preflightAtStart"] => ({
  pass: pf.pass,
  summary: pf.summary,
  checksRun: pf.checksRun,
  checksPassed: pf.checksPassed,
  checksFailed: pf.checksFailed,
  checksSkipped: pf.checksSkipped,
});

type RunRow = Omit<Selectable<TestRunsTable>, "run_id"> & { run_id: string };

/**
 * A jsonb value from its canonical JSON text. Sent as a text parameter and cast on the server: a JS string
 * bound straight to a jsonb parameter is JSON-encoded once more by postgres.js (a jsonb string).
 */
const jsonb = (value: unknown) => sql<string>`cast(${canonicalJson(value)}::text as jsonb)`;

/**
 * Test runs: start (plan frozen, lab state and pre-flight recorded), finish (results aggregated, the
 * report built once and frozen), and reads. At most one run is active (a partial unique index).
 *
 * @example
 * ```ts
 * import type { Kysely } from "kysely";
 * import type { Database } from "../db/schema.ts";
 * import type { Registry } from "../registry.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(db: Kysely<Database>, registry: Registry) {
 *   const runs = new RunService(db, registry, "LAB-INTERNAL");
 *   const run = await runs.start({ planIdentifier: "ngfw-throughput-decrypt-on" });
 *   await runs.finish(run.executionId, { outcome: "passed", results: { latencySamplesMs: [12.5, 14, 80] } });
 *   const { text, sha256 } = await runs.report(run.executionId); // the same bytes on every call
 * }
 * ```
 */
export class RunService {
  constructor(
    private db: Kysely<Database>,
    private registry: Registry,
    private defaultLicense: string,
    /** The lab's name (`DUT_LAB_NAME`), recorded on each run at its start. */
    private labName = "dutlab test lab",
  ) {}

  /**
   * DUT_NETBOX_WRITEBACK=on: a finish also queues a NetBox journal entry per device of the run (in its
   * transaction; docs/netbox.md "Writing verdicts back").
   */
  netboxWriteBack = false;

  /** A pre-flight evaluated on its own (POST /api/test-runs/preflight) did not pass: a webhook event. */
  async preflightFailedStandalone(pf: PreflightResult): Promise<void> {
    await this.db.transaction().execute((tx) => preflightFailed(tx, pf, null, "request"));
  }

  /**
   * Start a run: 404 for an unknown plan, 409 while another run is active. A start is gated when the plan
   * declares `startGate: "preflight-pass"` or the request sets `requirePreflightPass` (the request cannot
   * lift the plan's gate); a gated start whose pre-flight does not pass throws {@link StartGateRefused} and
   * stores nothing, unless the request carries `override` (the HTTP layer admits it for the admin role
   * only): then the run starts and records the override, its reason and `actor`. An override on an ungated
   * start is refused (400); on a gated start whose pre-flight passed it is not needed and not recorded.
   */
  async start(input: StartRunInput, actor: StartActor | null = null): Promise<RunView> {
    const plan = this.registry.plan(input.planIdentifier);
    if (!plan) throw new NotFoundError(`No plan with identifier "${input.planIdentifier}"`);
    const source = plan.startGate === "preflight-pass"
      ? "plan"
      : input.requirePreflightPass
      ? "request"
      : null;
    if (input.override && !source) {
      const message = `applies only to a gated start: plan "${plan.identifier}" declares no startGate and ` +
        "requirePreflightPass is not true";
      throw new InvalidInputError(`"override": ${message}`, { errors: [{ field: "override", message }] });
    }
    await this.#refuseIfActive(this.db);
    // A deep copy through canonical JSON: what is stored is exactly what the plan hash commits to.
    const frozen: Plan = JSON.parse(canonicalJson(plan));
    // One read of the lab for the pre-flight and the lab state: one view of the database, each payload
    // parsed once for both.
    const pf = preflightOf(this.registry, frozen);
    const read = await readLab(this.db, [pf.wants, labStateWants(this.registry)]);
    const preflight = pf.evaluate(read);
    const state = labStateOf(this.registry, read);
    if (source && !preflight.pass && !input.override) {
      await this.db.transaction().execute((tx) => preflightFailed(tx, preflight, null));
      throw new StartGateRefused(preflight, source);
    }
    const overridden = !!source && !preflight.pass && !!input.override;
    const startGate: StartGate = {
      gated: !!source,
      source,
      preflightPass: preflight.pass,
      override: overridden
        ? {
          reason: input.override!.reason,
          by: actor?.name ?? "unknown",
          role: actor?.role ?? "unknown",
          at: new Date().toISOString(),
        }
        : null,
    };
    const executionId = crypto.randomUUID();
    try {
      await this.db.transaction().execute(async (tx) => {
        await tx.insertInto("test_runs").values({
          execution_id: executionId,
          plan_identifier: frozen.identifier,
          plan_display_name: frozen.displayName,
          plan_catalog_version: this.registry.planCatalog.catalogVersion,
          plan_json: jsonb(frozen),
          plan_snapshot_sha256: await jcsSha256(frozen),
          license_id: input.licenseId ?? this.defaultLicense,
          notes: input.notes ?? null,
          status: "active",
          started_at: new Date(),
          start_state_json: jsonb(input.testbed ? { ...state, testbed: input.testbed } : state),
          preflight_json: jsonb(preflight),
          lab_name: this.labName,
          customer: input.customer ?? null,
          start_gate_json: jsonb(startGate),
        }).execute();
        if (!preflight.pass) await preflightFailed(tx, preflight, executionId);
      });
    } catch (e) {
      // The partial unique index on active runs: another start won the race.
      if (!isUniqueViolation(e)) throw e;
      await this.#refuseIfActive(this.db);
      throw new ConflictError("Another run was started at the same moment", { cause: e });
    }
    return await this.get(executionId);
  }

  async #refuseIfActive(db: Kysely<Database>) {
    const active = await db.selectFrom("test_runs").select("execution_id").where("status", "=", "active")
      .executeTakeFirst();
    if (active) {
      throw new ConflictError(`Run "${active.execution_id}" is active; finish it before starting another`, {
        extra: { activeExecutionId: active.execution_id },
      });
    }
  }

  async #row(db: Kysely<Database>, executionId: string, lock = false): Promise<RunRow> {
    let row: RunRow | undefined;
    if (isUuid(executionId)) {
      let q = db.selectFrom("test_runs").selectAll().select(sql<string>`run_id::text`.as("run_id"))
        .where("execution_id", "=", executionId);
      if (lock) q = q.forUpdate();
      row = await q.executeTakeFirst();
    }
    if (!row) throw new NotFoundError(`No test run with executionId "${executionId}"`);
    return row;
  }

  async #alerts(db: Kysely<Database>, executionIds: string[]): Promise<Map<string, DecryptAlert[]>> {
    const out = new Map<string, DecryptAlert[]>(executionIds.map((id) => [id, []]));
    if (!executionIds.length) return out;
    const rows = await db.selectFrom("run_alerts").selectAll()
      .select(sql<string>`snapshot_id::text`.as("snapshot_id"))
      .where("execution_id", "in", executionIds).orderBy("id").execute();
    for (const a of rows) {
      out.get(a.execution_id)!.push({
        name: "TLSDecryptModeChanged",
        at: new Date(a.at).toISOString(),
        deviceId: a.device_id,
        deviceHostname: a.device_hostname,
        from: a.from_state as "on" | "off",
        to: a.to_state as "on" | "off",
        snapshotId: a.snapshot_id,
      });
    }
    return out;
  }

  /** A run's TLSDecryptModeChanged alerts, oldest first (the report's `tlsDecrypt.alerts`). */
  async alerts(executionId: string): Promise<DecryptAlert[]> {
    return (await this.#alerts(this.db, [executionId])).get(executionId)!;
  }

  /** One run (404 when unknown). */
  async get(executionId: string): Promise<RunView> {
    const r = await this.#row(this.db, executionId);
    return this.#view(r, (await this.#alerts(this.db, [r.execution_id])).get(r.execution_id)!);
  }

  /**
   * The API view of a run. For a finished run every member that the frozen report also states is read
   * from the report (meta, licence, pre-flight and lab state at start, alerts, verdict), so the two can
   * never disagree; the row is immutable once finished (migration 2026_11_23_0005).
   */
  #view(r: RunRow, alerts: DecryptAlert[]): RunView {
    const view = this.#rowView(r, alerts);
    if (!r.report_json) return view;
    const report = JSON.parse(r.report_json) as ReportData;
    const annex = (id: string) => {
      const a = report.annexes.find((x) => x.id === id);
      return a ? JSON.parse(a.body) : undefined;
    };
    const pf = annex("preflight-at-start") as PreflightResult | undefined;
    const lab = annex("lab-at-start") as StartState | undefined;
    return {
      ...view,
      runId: report.meta.runId,
      executionId: report.meta.executionId,
      planIdentifier: report.meta.planIdentifier,
      planDisplayName: report.meta.planDisplayName,
      planCatalogVersion: report.meta.planCatalogVersion,
      planSnapshotSha256: report.meta.planSnapshotSha256,
      licenseId: report.license.id,
      customer: report.license.licensee !== undefined ? report.license.licensee : view.customer,
      labName: report.license.issuer ?? view.labName,
      notes: report.meta.notes,
      startedAt: report.meta.startedAt,
      endedAt: report.meta.endedAt,
      outcome: report.meta.outcome,
      preflightAtStart: pf ? preflightSummary(pf) : view.preflightAtStart,
      labAtStart: lab ? { ...lab, tlsDecrypt: labDecryptState(lab) } : view.labAtStart,
      alerts: report.tlsDecrypt.alerts,
      reportSha256: report.reportSha256,
      verdict: report.verdict ? { value: report.verdict.value, reasons: report.verdict.reasons } : null,
      startGate: report.startGate ?? view.startGate,
    };
  }

  #rowView(r: RunRow, alerts: DecryptAlert[]): RunView {
    const pf = jsonValue<PreflightResult>(r.preflight_json);
    const lab = jsonValue<StartState>(r.start_state_json);
    return {
      runId: String(r.run_id),
      executionId: r.execution_id,
      planIdentifier: r.plan_identifier,
      planDisplayName: r.plan_display_name,
      planCatalogVersion: r.plan_catalog_version,
      planSnapshotSha256: r.plan_snapshot_sha256,
      licenseId: r.license_id,
      customer: r.customer,
      labName: r.lab_name,
      notes: r.notes,
      status: r.status as "active" | "finished",
      startedAt: new Date(r.started_at).toISOString(),
      endedAt: r.ended_at ? new Date(r.ended_at).toISOString() : null,
      outcome: r.outcome,
      preflightAtStart: preflightSummary(pf),
      labAtStart: { ...lab, tlsDecrypt: labDecryptState(lab) },
      alerts,
      reportSha256: r.report_sha256,
      verdict: null,
      startGate: r.start_gate_json == null ? null : jsonValue<StartGate>(r.start_gate_json),
    };
  }

  /** Runs, newest first. */
  async list(limit = 100): Promise<RunView[]> {
    const rows = await this.db.selectFrom("test_runs").selectAll()
      .select(sql<string>`run_id::text`.as("run_id"))
      .orderBy("started_at", "desc").orderBy("test_runs.run_id", "desc").limit(limit).execute();
    const alerts = await this.#alerts(this.db, rows.map((r) => r.execution_id));
    return rows.map((r) => this.#view(r, alerts.get(r.execution_id)!));
  }

  /**
   * Runs newest first (start time, then id), filtered; one page of `limit` after the run the `cursor`
   * names. Null for a cursor this API did not make.
   */
  async page(f: RunFilter): Promise<{ runs: RunView[]; nextCursor: string | null } | null> {
    const limit = f.limit ?? 100;
    let q = this.db.selectFrom("test_runs").selectAll().select(sql<string>`run_id::text`.as("run_id"));
    if (f.status) q = q.where("status", "=", f.status);
    if (f.planIdentifier) q = q.where("plan_identifier", "=", f.planIdentifier);
    if (f.from) q = q.where("started_at", ">=", f.from);
    if (f.to) q = q.where("started_at", "<", f.to);
    if (f.cursor !== undefined) {
      const after = decodeCursor("r", f.cursor);
      if (after === null || !/^\d{1,18}$/.test(after)) return null;
      q = q.where(
        sql`(started_at, test_runs.run_id)`,
        "<",
        sql`(select c.started_at, c.run_id from test_runs c where c.run_id = ${after}::bigint)`,
      );
    }
    const rows = await q.orderBy("started_at", "desc").orderBy("test_runs.run_id", "desc").limit(limit + 1)
      .execute();
    const page = rows.slice(0, limit);
    const last = page.at(-1); // absent only when the limit is 0, then there is no next page
    const alerts = await this.#alerts(this.db, page.map((r) => r.execution_id));
    return {
      runs: page.map((r) => this.#view(r, alerts.get(r.execution_id)!)),
      nextCursor: rows.length > limit && last ? encodeCursor("r", String(last.run_id)) : null,
    };
  }

  /**
   * Finish the active run: aggregate the results, build the report once and freeze it. One transaction
   * holding the run's row lock, so a poll committing meanwhile is either in the report or not linked.
   */
  async finish(executionId: string, input: FinishRunInput, baseUrl = ""): Promise<RunView> {
    await this.db.transaction().execute(async (tx) => {
      const r = await this.#row(tx, executionId, true);
      if (r.status !== "active") throw new ConflictError(`Run "${executionId}" is already finished`);
      const endedAt = new Date();
      const report = await assembleReport({
        db: tx,
        registry: this.registry,
        run: r,
        outcome: input.outcome,
        results: input.results,
        endedAt,
        endState: labStateOf(this.registry, await readLab(tx, [labStateWants(this.registry)])),
        alerts: (await this.#alerts(tx, [r.execution_id])).get(r.execution_id)!,
        labName: this.labName,
      });
      await tx.updateTable("test_runs").set({
        status: "finished",
        ended_at: endedAt,
        outcome: input.outcome,
        results_json: jsonb(input.results),
        report_json: JSON.stringify(report, null, 2) + "\n",
        report_sha256: report.reportSha256,
      }).where("execution_id", "=", r.execution_id).execute();
      const run = { executionId, planIdentifier: r.plan_identifier, outcome: input.outcome, endedAt };
      await runFinished(tx, run, report, baseUrl);
      if (this.netboxWriteBack) {
        const lab = jsonValue<StartState>(r.start_state_json);
        await netboxJournalQueued(tx, executionId, lab?.devices ?? []);
      }
    });
    return await this.get(executionId);
  }

  /** The frozen report bytes; 404 for an unknown or unfinished run. */
  async report(executionId: string): Promise<{ text: string; sha256: string; licenseId: string }> {
    const r = await this.#row(this.db, executionId);
    if (!r.report_json || !r.report_sha256) {
      throw new NotFoundError(`Run "${executionId}" has not finished; its report does not exist yet`);
    }
    return { text: r.report_json, sha256: r.report_sha256, licenseId: r.license_id };
  }
}
