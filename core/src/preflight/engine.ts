import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import type { CheckContext, CheckDefinition, CheckDevice, CheckSnapshot } from "../check.ts";
import type { AdapterDefinition } from "../adapter.ts";
import type { FactName } from "../capability.ts";
import { planSelects, serves } from "../capability.ts";
import { type FieldError, InvalidInputError } from "../errors.ts";
import { isUuid } from "../util/ids.ts";

/** The snapshot a check result cites: the same three values the snapshot listing returns for it. */
export interface Evidence {
  /** Id of the cited snapshot. */
  snapshotId: string;
  /** SHA-256 (hex) of the snapshot's payload. */
  payloadSha256: string;
  /** When the snapshot was collected (ISO 8601). */
  collectedAt: string;
}

/** One check result (spec 2.4). */
export interface CheckResult {
  /** Id of the check that was evaluated. */
  checkId: string;
  /** The check's one-line description. */
  description: string;
  /** Id of the device it was evaluated on (UUID). */
  deviceId: string;
  /** That device's host name. */
  deviceHostname: string;
  /** That device's vendor key. */
  vendor: string;
  /** True only for status `pass`. */
  pass: boolean;
  /**
   * `pass`; `fail`; `skipped` (no snapshot of the label: `evidence` null); `error` (the check threw, met a
   * payload it cannot read or returned no valid outcome: a fail whose detail starts with `check error:`).
   */
  status: "pass" | "fail" | "skipped" | "error";
  /** One line: what the check found, or why it was skipped or could not read the payload. */
  detail: string;
  /** The snapshot the result rests on; null when skipped. */
  evidence: Evidence | null;
}

/** Pre-flight result (spec 2.4). `checksRun` = `checksPassed` + `checksFailed` + `checksSkipped`. */
export interface PreflightResult {
  /** The plan's identifier. */
  planIdentifier: string;
  /** When the pre-flight ran (ISO 8601). */
  ranAt: string;
  /** Check results, one per (check, device) pair evaluated. */
  checksRun: number;
  /** Results that passed. */
  checksPassed: number;
  /** Plain fails and errors. */
  checksFailed: number;
  /** Results skipped (e.g. no snapshot of the check's label). */
  checksSkipped: number;
  /** True when at least one check ran, every one passed, and a filter left out nothing the plan requires. */
  pass: boolean;
  /** Every result, in evaluation order. */
  checks: CheckResult[];
  /** One line for a person: the counts and whether the lab is ready for the plan. */
  summary: string;
  /**
   * The moment the lab was evaluated as of (request `asOf`): the newest snapshot at or before it per device
   * and label, `snapshot-fresh` judged against it. Absent: the lab as it stands now.
   */
  asOf?: string;
  /** Present when the request filtered devices, checks or tags (README "Pre-flight"). */
  selection?: SelectionReport;
}

/** What a filtered pre-flight evaluated and what the filter left out. */
export interface SelectionReport {
  /** The filters as given (hostnames and ids as sent), null when absent. */
  devices: string[] | null;
  /** The check-id filter as given, null when absent. */
  checks: string[] | null;
  /** The tag filter as given, null when absent. */
  tags: string[] | null;
  /**
   * The (check, device) pairs the whole plan evaluates that the selection left out, and the devices and checks
   * they name. Non-zero `pairs`: the result is no readiness verdict for the plan and `pass` is false.
   */
  excluded: { pairs: number; devices: string[]; checks: string[] };
  /** True when the selection left out nothing the plan evaluates (`excluded.pairs` is 0). */
  complete: boolean;
}

/** A pre-flight request's filters, resolved against the registry and the devices (see {@link resolveSelection}). */
export interface Selection {
  /** Device ids to evaluate (the named devices, narrowed by the tags); null: every enabled device. */
  deviceIds: Set<string> | null;
  /** Check ids to evaluate; null: every check. */
  checkIds: Set<string> | null;
  /** The filters as the request gave them. */
  given: { devices: string[] | null; checks: string[] | null; tags: string[] | null };
}

/** How a pre-flight reads and filters the lab (all optional: the whole plan, the lab as it stands now). */
export interface PreflightOptions {
  /** Evaluate the lab as of this moment (newest snapshot at or before it per device and label). */
  asOf?: Date;
  /** Only these devices and checks (from {@link resolveSelection}). */
  selection?: Selection;
}

const MAX_ERROR_TEXT = 300;

function message(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.length > MAX_ERROR_TEXT ? `${m.slice(0, MAX_ERROR_TEXT)}…` : m;
}

/** Freeze a payload so that a check cannot change what the next check reads. */
function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** `deepFreeze` for what `JSON.parse` returns (plain objects and arrays only), without the allocations. */
function freezeParsed(v: unknown): unknown {
  if (typeof v === "object" && v !== null) {
    Object.freeze(v);
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) freezeParsed(v[i]); }
    else for (const k in v) freezeParsed((v as Record<string, unknown>)[k]);
  }
  return v;
}

/** Whether a check applies to a device and plan: a boolean, or what `appliesTo` threw. */
type Applies = boolean | { threw: string };

/**
 * Whether a check applies to a device and plan: the plan selects the device (role and vendor), the device's
 * adapter serves the check (collects its label, offers the facts it needs), then the check's own
 * `appliesTo` if it has one.
 */
function applies(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  adapter: Pick<AdapterDefinition, "labels" | "facts" | "deviceRoles"> | undefined,
): Applies {
  if (check.optIn && !(plan.checks ?? []).includes(check.id)) return false;
  if (!planSelects(plan, device, adapter?.deviceRoles[0] ?? null) || !serves(adapter, check)) return false;
  if (!check.appliesTo) return true;
  try {
    return !!check.appliesTo(device, plan);
  } catch (e) {
    return { threw: message(e) };
  }
}

/**
 * Evaluate one check against one device exactly as the pre-flight engine does, without a database:
 * `null` when the check does not apply to the device and plan (the plan does not select the device, the
 * adapter does not serve the check, or `appliesTo` says no; without `adapter`, the label counts as
 * collected and `ctx.facts` as the offered facts); `skipped` without a snapshot; `error` when
 * `appliesTo` or `evaluate` throws, `ctx.facts` lacks a fact the check `needs` (`vendor V offers no F
 * reading`) or `evaluate` returns no `{pass: boolean, detail: string}`; else the
 * check's own pass or fail. The payload is frozen before the check sees it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { AdapterDefinition, CheckDefinition, CheckDevice, CheckSnapshot, Plan } from "@dutlab/core";
 * declare const check: CheckDefinition, device: CheckDevice, plan: Plan, snapshot: CheckSnapshot;
 * declare const adapter: AdapterDefinition;
 * const r = evaluateCheck(check, device, plan, snapshot, { now: new Date(), facts: adapter.facts ?? {} });
 * assert.equal(r?.status, "pass");
 * ```
 */
export function evaluateCheck(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  snapshot: CheckSnapshot | null,
  ctx: CheckContext,
  adapter?: Pick<AdapterDefinition, "labels" | "facts" | "deviceRoles">,
): CheckResult | null {
  const a = applies(
    check,
    device,
    plan,
    adapter ?? { labels: [check.label, ...(check.alsoReads ?? [])], facts: ctx.facts, deviceRoles: [] },
  );
  if (a === false) return null;
  const view = () => {
    deepFreeze(snapshot!.payload);
    return { ...snapshot!, collectedAt: new Date(snapshot!.collectedAt) };
  };
  return evaluateApplicable({ check, device, plan, snapshot, view, ctx, applied: a });
}

/**
 * Whether a check applies to a device of an adapter (undefined: the vendor has no enabled adapter) under a
 * plan, as the pre-flight engine decides it: the plan selects the device, the adapter serves the check, and
 * the check's `appliesTo` (if any) does not say no.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { AdapterDefinition, CheckDefinition, Plan } from "@dutlab/core";
 * declare const check: CheckDefinition, plan: Plan, adapter: AdapterDefinition;
 * assert.equal(checkApplies(check, { id: "d", hostname: "fw", vendor: "x", deviceRole: null }, plan, adapter), true);
 * ```
 */
export function checkApplies(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  adapter: Pick<AdapterDefinition, "labels" | "facts" | "deviceRoles"> | undefined,
): boolean {
  return applies(check, device, plan, adapter) !== false;
}

/** One (check, device) evaluation once `appliesTo` has answered, as {@link evaluateApplicable} takes it. */
interface Applicable {
  check: CheckDefinition;
  device: CheckDevice;
  plan: Plan;
  /** What the evidence cites; null without a snapshot of the check's label (`skipped`). */
  snapshot: Pick<CheckSnapshot, "id" | "payloadSha256" | "collectedAt"> | null;
  /** Builds the snapshot the check evaluates, a fresh object whose payload is frozen. */
  view: () => CheckSnapshot;
  ctx: CheckContext;
  /** What `appliesTo` answered (anything but `false`). */
  applied: true | { threw: string };
}

/** The rest of `evaluateCheck` once `appliesTo` has answered. */
function evaluateApplicable(
  { check, device, plan, snapshot, view, ctx, applied }: Applicable,
): CheckResult {
  const base = {
    checkId: check.id,
    description: check.description,
    deviceId: device.id,
    deviceHostname: device.hostname,
    vendor: device.vendor,
  };
  const evidence: Evidence | null = snapshot && {
    snapshotId: snapshot.id,
    payloadSha256: snapshot.payloadSha256,
    collectedAt: snapshot.collectedAt.toISOString(),
  };
  const error = (detail: string): CheckResult => ({
    ...base,
    pass: false,
    status: "error",
    detail: `check error: ${detail}`,
    evidence,
  });
  // A broken predicate must not hide the check (a lab would look ready): it is reported as an error.
  if (applied !== true) return error(`appliesTo failed for this device (${applied.threw})`);
  if (!snapshot) {
    return {
      ...base,
      pass: false,
      status: "skipped",
      detail: `no ${check.label} snapshot of this device yet: take a snapshot, then re-run pre-flight`,
      evidence: null,
    };
  }
  const seen = view();
  // The check's `needs` are typed as present in `ctx.facts`: a check carries no guard, the engine checks once.
  // Reached only when `ctx.facts` is not the adapter's own (the capability test has already required them).
  const missing = check.needs?.find((f) => !ctx.facts[f]);
  if (missing) {
    return error(
      `could not evaluate the ${check.label} payload (vendor ${seen.vendor} offers no ${missing} reading)`,
    );
  }
  let r: unknown;
  try {
    // Every fact in `needs` is present (checked above); a check reads only the facts it needs.
    r = check.evaluate(seen, plan, ctx as CheckContext<FactName>);
  } catch (e) {
    return error(`could not evaluate the ${check.label} payload (${message(e)})`);
  }
  const o = r as { pass?: unknown; detail?: unknown } | null;
  if (typeof o !== "object" || o === null || typeof o.pass !== "boolean" || typeof o.detail !== "string") {
    return error("evaluate returned no {pass: boolean, detail: string} (checks are synchronous)");
  }
  return { ...base, pass: o.pass, status: o.pass ? "pass" : "fail", detail: o.detail, evidence };
}

/**
 * Counts and the summary line of a list of results. With a `selection` the summary says the result is
 * filtered, and `pass` is true only when the selection left out nothing the plan evaluates (README
 * "Pre-flight": a filtered result never says a plan is ready when devices or checks it requires were left
 * out).
 */
export function summarize(
  plan: Pick<Plan, "identifier">,
  checks: CheckResult[],
  now: Date,
  opts: { asOf?: Date; selection?: SelectionReport } = {},
): PreflightResult {
  const passed = checks.filter((c) => c.status === "pass").length;
  const skipped = checks.filter((c) => c.status === "skipped").length;
  const errors = checks.filter((c) => c.status === "error").length;
  const failed = checks.length - passed - skipped;
  const sel = opts.selection;
  const allPassed = checks.length > 0 && passed === checks.length;
  const pass = allPassed && (!sel || sel.complete);
  const at = opts.asOf ? ` as of ${opts.asOf.toISOString()}` : "";
  const head = `${passed}/${checks.length} checks passed${sel ? " on a filtered selection" : ""}${at}`;
  const notReady = (why: string) => `${head} — not ready for ${plan.identifier}: ${why}`;
  const counts = `${failed} failed${errors ? ` (${errors} could not be evaluated)` : ""}, ${skipped} skipped`;
  let summary: string;
  if (sel && !sel.complete) {
    const left = sel.excluded;
    summary = `${head} — not a readiness verdict for ${plan.identifier}: the filter left out ${left.pairs} ` +
      `(check, device) pair(s) the plan requires (devices: ${left.devices.join(", ") || "none"}; checks: ${
        left.checks.join(", ") || "none"
      })${allPassed ? "" : `; in the selection ${counts}`}`;
  } else if (checks.length === 0) {
    summary = notReady(
      sel ? "no check of the selection applies" : "no enabled device takes part in the plan",
    );
  } else if (pass) {
    summary = `${head} — ready for ${plan.identifier}${
      sel ? " (the filter left out nothing it requires)" : ""
    }`;
  } else summary = notReady(counts);
  const result: PreflightResult = {
    planIdentifier: plan.identifier,
    ranAt: now.toISOString(),
    checksRun: checks.length,
    checksPassed: passed,
    checksFailed: failed,
    checksSkipped: skipped,
    pass,
    checks,
    summary,
  };
  if (opts.asOf) result.asOf = opts.asOf.toISOString();
  if (sel) result.selection = sel;
  return result;
}

/** One payload: its text until a check first reads it, then its parsed, frozen value. */
export class PayloadEntry {
  #text: string | null;
  #value: unknown = undefined;

  /** An entry over a payload's `text`; `size` is what it counts against the cache budget. */
  constructor(text: string, readonly size: number) {
    this.#text = text;
  }

  /** The parsed, frozen payload (parsed on first use; throws when the text is not JSON). */
  get value(): unknown {
    if (this.#text !== null) {
      this.#value = freezeParsed(JSON.parse(this.#text));
      this.#text = null;
    }
    return this.#value;
  }
}

/**
 * Payloads by SHA-256, kept across pre-flights up to a budget of payload text (least recently used first
 * out), parsed when a check first reads them. A payload's hash names its content, and stored payloads are
 * immutable, so an entry is valid for any database and never goes stale; the budget only bounds memory.
 */
export class PayloadCache {
  #entries = new Map<string, PayloadEntry>();
  #bytes = 0;

  /** A cache holding at most `budgetBytes` of payload text (UTF-16 code units). */
  constructor(readonly budgetBytes: number) {}

  /** Whether a payload with this SHA-256 is cached (does not mark it used). */
  has(sha: string): boolean {
    return this.#entries.has(sha);
  }

  /** The entry (and marks it recently used), or undefined. */
  get(sha: string): PayloadEntry | undefined {
    const e = this.#entries.get(sha);
    if (!e) return undefined;
    this.#entries.delete(sha);
    this.#entries.set(sha, e);
    return e;
  }

  /** The entry for a payload text read from the database (kept if it fits the budget). */
  put(sha: string, text: string): PayloadEntry {
    const known = this.#entries.get(sha);
    if (known) return known;
    const e = new PayloadEntry(text, text.length);
    if (e.size > this.budgetBytes) return e;
    this.#entries.set(sha, e);
    this.#bytes += e.size;
    for (const [k, old] of this.#entries) {
      if (this.#bytes <= this.budgetBytes) break;
      this.#entries.delete(k);
      this.#bytes -= old.size;
    }
    return e;
  }

  /** Payload text cached, in UTF-16 code units. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Number of payloads cached. */
  get size(): number {
    return this.#entries.size;
  }

  /** Drop every entry. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/** The process's payload cache: 32 MiB of payload text (~10,000 payloads of a few kB). */
export const payloadCache = new PayloadCache(32 * 1024 * 1024);

/** The latest snapshot of one (device, label), as the lab read returns it. */
export interface Latest {
  id: string;
  /** SHA-256 of its payload. */
  sha: string;
  at: Date;
}

/**
 * One read of the lab (see {@link readLab}): the enabled devices, the latest snapshot of the (label, device)
 * pairs its readers asked for, and their payloads.
 */
export interface LabRead {
  /** Enabled devices, by hostname then id. */
  devices: CheckDevice[];
  /** Label → device id → its latest snapshot of that label (asked-for pairs that have one). */
  latest: Map<string, Map<string, Latest>>;
  /**
   * The payload of every latest snapshot read, by SHA-256 (from {@link payloadCache} or read now), parsed
   * and frozen on first use, once for all readers.
   */
  payloads: Map<string, PayloadEntry>;
}

/** What a reader of the lab needs, given the enabled devices: label → the ids of the devices to read. */
export type LabWants = (devices: CheckDevice[]) => Map<string, Set<string>>;

/** How {@link readLab} reads: now or as of a moment, with or without the payloads. */
export interface LabReadOptions {
  /**
   * Read the lab as it stood at this moment: devices registered at or before it, and per wanted (label,
   * device) the newest snapshot collected at or before it, instead of `snapshot_latest`.
   */
  asOf?: Date;
  /** False: do not read payloads (a dry run names the snapshots it would read, nothing more). */
  payloads?: boolean;
}

/**
 * Read the lab once for one or more readers (the pre-flight of a plan, a run's lab state): at most three
 * SELECTs whatever the number of readers, checks and devices, in one read-only REPEATABLE READ transaction
 * (one view of the database; `db` already in a transaction is read as is): the enabled devices; then,
 * once every reader has said what it wants of them, the latest snapshot of only those (label, device)
 * pairs; then each distinct payload text once, except those in {@link payloadCache}.
 *
 * With `asOf`, "latest" means the newest snapshot collected at or before `asOf`, found per pair by a
 * backward scan of the index `snapshots_device_label_id (device_id, endpoint_label, id desc)` that stops at
 * the first row collected at or before `asOf` (README "Pre-flight", "As of a past moment").
 */
export async function readLab(
  db: Kysely<Database>,
  wants: LabWants[],
  opts: LabReadOptions = {},
): Promise<LabRead> {
  const read = (tx: Kysely<Database>) => readLabIn(tx, wants, opts);
  return db.isTransaction
    ? await read(db)
    : await db.transaction().setIsolationLevel("repeatable read").setAccessMode("read only").execute(read);
}

/** One row of the lab read's snapshot statement. */
export type LatestRow = {
  /** The device's id. */
  device_id: string;
  /** The snapshot's endpoint label. */
  endpoint_label: string;
  /** The snapshot's id. */
  snapshot_id: string;
  /** SHA-256 (hex) of the snapshot's payload. */
  sha256: string;
  /** When the snapshot was collected (the driver gives a Date or a timestamp string). */
  collected_at: Date | string;
};

/**
 * The snapshot statement of a lab read as of a moment (exported for its plan test in
 * tests/preflight_filters_test.ts): per wanted pair (per label, its device ids comma-separated), the last
 * snapshot stored (highest id, the order `snapshot_latest` keeps) among those collected at or before `asOf`.
 * It reads the pair's range of the index `snapshots_device_label_id (device_id, endpoint_label, id desc)` from
 * the newest entry and stops at the first row collected at or before `asOf`: the rows read are the pair's
 * snapshots stored since `asOf`.
 *
 * The pair is matched with row comparisons, not equalities, on purpose: with `device_id = … and
 * endpoint_label = …` PostgreSQL drops both from the ORDER BY (they equal outer values), leaving `id desc`,
 * which the primary key also serves; for a small lab with a long history the planner then prefers a backward
 * scan of the primary key filtered on the pair, which walks every device's snapshots since `asOf` once per
 * pair (seen on PGlite with 40,000 rows). A row comparison is no equivalence: the ORDER BY keeps
 * `device_id, endpoint_label, id desc`, which only `snapshots_device_label_id` provides, and both bounds are
 * its index condition.
 */
export function latestAsOfSql(labels: string[], ids: string[], asOf: Date): RawBuilder<LatestRow> {
  return sql<LatestRow>`select n.device_id::text, g.label as endpoint_label, s.id::text as snapshot_id,
      s.payload_sha256 as sha256, s.collected_at
    from unnest(${labels}::text[], ${ids}::text[]) as g(label, ids)
    cross join lateral unnest(string_to_array(g.ids, ',')::uuid[]) as n(device_id)
    cross join lateral (select x.id, x.payload_sha256, x.collected_at from snapshots x
      where (x.device_id, x.endpoint_label) >= (n.device_id, g.label)
        and (x.device_id, x.endpoint_label) <= (n.device_id, g.label) and x.collected_at <= ${asOf}
      order by x.device_id, x.endpoint_label, x.id desc limit 1) s`;
}

async function readLabIn(tx: Kysely<Database>, readers: LabWants[], opts: LabReadOptions): Promise<LabRead> {
  let dq = tx.selectFrom("devices").select(["id", "hostname", "vendor", "device_role"])
    .where("enabled", "=", true);
  // As of a moment: a device registered after it was not part of the lab then.
  if (opts.asOf) dq = dq.where(sql<boolean>`created_at <= ${opts.asOf}`);
  const devices: CheckDevice[] = (await dq.orderBy("hostname").orderBy("id").execute())
    .map((d) => ({ id: d.id, hostname: d.hostname, vendor: d.vendor, deviceRole: d.device_role }));
  const wanted = new Map<string, Set<string>>();
  for (const reader of readers) {
    for (const [label, ids] of reader(devices)) {
      let all = wanted.get(label);
      if (!all) wanted.set(label, all = new Set());
      for (const id of ids) all.add(id);
    }
  }
  const latest = new Map<string, Map<string, Latest>>();
  const payloads = new Map<string, PayloadEntry>();
  const labels = [...wanted.keys()].filter((l) => wanted.get(l)!.size > 0);
  if (labels.length === 0) return { devices, latest, payloads };
  // The latest snapshot of each wanted pair (small rows). Per label, its device ids comma-separated (UUIDs).
  const ids = labels.map((l) => [...wanted.get(l)!].join(","));
  const { rows } = await (opts.asOf ? latestAsOfSql(labels, ids, opts.asOf) : sql<LatestRow>`select
        l.device_id::text, l.endpoint_label, l.snapshot_id::text, s.payload_sha256 as sha256, s.collected_at
      from unnest(${labels}::text[], ${ids}::text[]) as g(label, ids)
      cross join lateral unnest(string_to_array(g.ids, ',')::uuid[]) as n(device_id)
      join snapshot_latest l on l.device_id = n.device_id and l.endpoint_label = g.label
      join snapshots s on s.id = l.snapshot_id`).execute(tx);
  const shas = new Set<string>();
  for (const r of rows) {
    let byDevice = latest.get(r.endpoint_label);
    if (!byDevice) latest.set(r.endpoint_label, byDevice = new Map());
    byDevice.set(r.device_id, { id: r.snapshot_id, sha: r.sha256, at: new Date(r.collected_at) });
    shas.add(r.sha256);
  }
  if (opts.payloads === false) return { devices, latest, payloads };
  // Then each distinct payload text once, only those not parsed already (payloads never change).
  // Cache hits are taken now, so a concurrent read's evictions cannot take them away later.
  const missing: string[] = [];
  for (const sha of shas) {
    const e = payloadCache.get(sha);
    if (e) payloads.set(sha, e);
    else missing.push(sha);
  }
  if (missing.length) {
    const read = await sql<{ sha256: string; payload: string }>`select sha256, payload
      from snapshot_payloads where sha256 = any(${missing}::text[])`.execute(tx);
    for (const p of read.rows) payloads.set(p.sha256, payloadCache.put(p.sha256, p.payload));
  }
  return { devices, latest, payloads };
}

/** One (device, check, label) triple a dry run names, with the snapshot it would read. */
export interface PlannedRead {
  /** Id of the check. */
  checkId: string;
  /** Id of the device. */
  deviceId: string;
  /** Hostname of the device. */
  deviceHostname: string;
  /** The device's vendor key. */
  vendor: string;
  /** The endpoint label read. */
  label: string;
  /** `evidence`: the label the result cites; `related`: a further label the check reads (`alsoReads`). */
  reads: "evidence" | "related";
  /** The snapshot it would read, null when none (the check would be skipped, or read `null` as related). */
  snapshot: Evidence | null;
}

/** A dry run's answer: what a pre-flight would evaluate and read, without evaluating (README "Pre-flight"). */
export interface PreflightPlan {
  /** The plan's identifier. */
  planIdentifier: string;
  /** Always true: nothing was evaluated. */
  dryRun: true;
  /** When the dry run ran (ISO 8601). */
  ranAt: string;
  /** The moment the lab would be evaluated as of (request `asOf`); absent: now. */
  asOf?: string;
  /** Distinct (check, device) pairs that would be evaluated. */
  evaluations: number;
  /** Of those, the pairs without a snapshot of the check's label (they would be skipped). */
  wouldSkip: number;
  /** Each snapshot each evaluation would read. */
  reads: PlannedRead[];
  /** One line for a person: what would be evaluated. */
  summary: string;
  /** Present when the request filtered devices, checks or tags. */
  selection?: SelectionReport;
}

/**
 * The pre-flight of a plan as a reader of the lab: `wants` asks for the labels the checks that apply read
 * (asking `appliesTo`, once per device list), `evaluate` evaluates them over the read, `dryRun` names what
 * would be evaluated and read. {@link runPreflight} reads the lab for it alone; a run's start reads it
 * together with the run's lab state. A `selection` narrows the devices and checks evaluated; what the whole
 * plan would evaluate beyond it is reported in the result's `selection.excluded`.
 */
export function preflightOf(registry: Registry, plan: Plan, selection?: Selection): {
  wants: LabWants;
  evaluate(read: LabRead, now?: Date, asOf?: Date): PreflightResult;
  dryRun(read: LabRead, now?: Date, asOf?: Date): PreflightPlan;
} {
  const defs = registry.checks.map((c) => c.check);
  const checkSelected = defs.map((c) => !selection?.checkIds || selection.checkIds.has(c.id));
  const deviceSelected = (d: CheckDevice) => !selection?.deviceIds || selection.deviceIds.has(d.id);
  // appliesTo needs only the device and the plan: asked once per device list, kept for the evaluation.
  let memo: { devices: CheckDevice[]; verdicts: Applies[][] } | undefined;
  const verdictsOf = (devices: CheckDevice[]): Applies[][] => {
    if (memo?.devices === devices) return memo.verdicts;
    const adapters = devices.map((d) => registry.adapters.get(d.vendor)?.adapter);
    const verdicts = defs.map((check) =>
      devices.map((device, j) => applies(check, device, plan, adapters[j]))
    );
    memo = { devices, verdicts };
    return verdicts;
  };
  /** Calls `f` for every (check, device) the plan evaluates; `selected`: whether the selection keeps it. */
  const eachPair = (
    devices: CheckDevice[],
    f: (
      check: CheckDefinition,
      device: CheckDevice,
      applied: true | { threw: string },
      selected: boolean,
    ) => void,
  ) => {
    const verdicts = verdictsOf(devices);
    defs.forEach((check, i) => {
      const row = verdicts[i]!; // verdictsOf: one row per check, one verdict per device
      devices.forEach((device, j) => {
        const applied = row[j]!;
        if (applied !== false) f(check, device, applied, checkSelected[i]! && deviceSelected(device));
      });
    });
  };
  // Fetch a label for a device only when a selected check of that label applies to it, or when its
  // appliesTo threw (the error result cites that snapshot).
  const wants: LabWants = (devices) => {
    const wanted = new Map<string, Set<string>>();
    eachPair(devices, (check, device, _applied, selected) => {
      if (!selected) return;
      for (const label of [check.label, ...(check.alsoReads ?? [])]) {
        let ids = wanted.get(label);
        if (!ids) wanted.set(label, ids = new Set());
        ids.add(device.id);
      }
    });
    return wanted;
  };
  /** What the selection left out of the plan's pairs, or undefined without a selection. */
  const report = (devices: CheckDevice[]): SelectionReport | undefined => {
    if (!selection) return undefined;
    let pairs = 0;
    const outDevices = new Set<string>();
    const outChecks = new Set<string>();
    eachPair(devices, (check, device, _applied, selected) => {
      if (selected) return;
      pairs++;
      if (!deviceSelected(device)) outDevices.add(device.hostname);
      if (selection.checkIds && !selection.checkIds.has(check.id)) outChecks.add(check.id);
    });
    return {
      ...selection.given,
      excluded: { pairs, devices: [...outDevices].sort(), checks: [...outChecks].sort() },
      complete: pairs === 0,
    };
  };
  const evaluate = (
    { devices, latest, payloads }: LabRead,
    now: Date = new Date(),
    asOf?: Date,
  ): PreflightResult => {
    // Each distinct payload is parsed and frozen once, when a check first reads it: every check of every
    // device that reads it sees the same, unchangeable value, and a payload no check reads is never parsed.
    // Payloads are kept for later pre-flights (content-addressed and immutable, so always valid).
    const payloadOf = (sha: string): unknown => payloads.get(sha)!.value;
    const known = (sha: string) => payloads.has(sha);
    const facts = new Map(
      devices.map((d) => [d.vendor, registry.adapters.get(d.vendor)?.adapter.facts ?? {}]),
    );
    // As of a moment, checks judge time against that moment (`snapshot-fresh`), not against now.
    const clock = asOf ?? now;
    const checks: CheckResult[] = [];
    eachPair(devices, (check, device, applied, selected) => {
      if (!selected) return;
      const s = latest.get(check.label)?.get(device.id);
      const snapshot = s && known(s.sha) ? { id: s.id, payloadSha256: s.sha, collectedAt: s.at } : null;
      const view = () => lazySnapshot(s!, device, check.label, payloadOf);
      const ctx: CheckContext = { now: new Date(clock), facts: facts.get(device.vendor)! };
      if (check.alsoReads) {
        const related: Record<string, CheckSnapshot | null> = {};
        for (const label of check.alsoReads) {
          const r = latest.get(label)?.get(device.id);
          related[label] = r && known(r.sha) ? lazySnapshot(r, device, label, payloadOf) : null;
        }
        ctx.related = related;
      }
      checks.push(evaluateApplicable({ check, device, plan, snapshot, view, ctx, applied }));
    });
    return summarize(plan, checks, now, { asOf, selection: report(devices) });
  };
  const dryRun = ({ devices, latest }: LabRead, now: Date = new Date(), asOf?: Date): PreflightPlan => {
    const reads: PlannedRead[] = [];
    let evaluations = 0;
    let wouldSkip = 0;
    const hosts = new Set<string>();
    eachPair(devices, (check, device, _applied, selected) => {
      if (!selected) return;
      evaluations++;
      hosts.add(device.id);
      [check.label, ...(check.alsoReads ?? [])].forEach((label, k) => {
        const s = latest.get(label)?.get(device.id);
        if (k === 0 && !s) wouldSkip++;
        reads.push({
          checkId: check.id,
          deviceId: device.id,
          deviceHostname: device.hostname,
          vendor: device.vendor,
          label,
          reads: k === 0 ? "evidence" : "related",
          snapshot: s ? { snapshotId: s.id, payloadSha256: s.sha, collectedAt: s.at.toISOString() } : null,
        });
      });
    });
    const sel = report(devices);
    const summary = `dry run: would evaluate ${evaluations} check(s) on ${hosts.size} device(s) for ` +
      `${plan.identifier}${asOf ? ` as of ${asOf.toISOString()}` : ""}; ${wouldSkip} without a snapshot ` +
      `would be skipped${
        sel
          ? `; filtered: the filter left out ${sel.excluded.pairs} (check, device) pair(s) the plan requires`
          : ""
      }`;
    const out: PreflightPlan = {
      planIdentifier: plan.identifier,
      dryRun: true,
      ranAt: now.toISOString(),
      evaluations,
      wouldSkip,
      reads,
      summary,
    };
    if (asOf) out.asOf = asOf.toISOString();
    if (sel) out.selection = sel;
    return out;
  };
  return { wants, evaluate, dryRun };
}

/** A pre-flight request's filters as sent (README "Pre-flight"). */
export interface SelectionRequest {
  /** Device ids or hostnames. */
  devices?: string[];
  /** Check ids. */
  checks?: string[];
  /** Device tags: a device is selected when it carries every one (AND). */
  tags?: string[];
}

/**
 * Resolve a pre-flight request's filters: undefined when it gives none. Every name must be known: a device id
 * or hostname of a registered, enabled device (pre-flight reads enabled devices only), a check id of an
 * enabled check, a tag some registered device carries; otherwise an {@link InvalidInputError} naming each
 * unknown one (`devices.1`, `checks.0`, `tags.2`: the dotted paths of validation problems). One SELECT, only when devices or tags are given.
 */
export async function resolveSelection(
  db: Kysely<Database>,
  registry: Registry,
  req: SelectionRequest,
): Promise<Selection | undefined> {
  const { devices, checks, tags } = req;
  if (devices === undefined && checks === undefined && tags === undefined) return undefined;
  const errors: FieldError[] = [];
  let checkIds: Set<string> | null = null;
  if (checks !== undefined) {
    const known = new Set(registry.checks.map((c) => c.check.id));
    checks.forEach((id, i) => {
      if (!known.has(id)) {
        errors.push({
          field: `checks.${i}`,
          message: `unknown check "${id}"; enabled checks: ${[...known].join(", ")}`,
        });
      }
    });
    checkIds = new Set(checks);
  }
  let deviceIds: Set<string> | null = null;
  if (devices !== undefined || tags !== undefined) {
    const names = devices ?? [];
    const uuids = names.filter(isUuid);
    const rows = await db.selectFrom("devices").select(["id", "hostname", "enabled", "tags"])
      .where((eb) => {
        const or = [eb("hostname", "in", names.length ? names : [""])];
        if (uuids.length) or.push(eb("id", "in", uuids));
        if (tags?.length) or.push(eb(sql<boolean>`tags && cast(${[...tags]} as text[])`, "=", true));
        return eb.or(or);
      }).execute();
    const byName = new Map<string, (typeof rows)[number]>();
    for (const r of rows) byName.set(r.hostname, r).set(r.id, r);
    if (devices !== undefined) {
      deviceIds = new Set();
      devices.forEach((name, i) => {
        const r = byName.get(name);
        if (!r) {
          errors.push({
            field: `devices.${i}`,
            message: `unknown device "${name}" (no such id or hostname)`,
          });
        } else if (!r.enabled) {
          errors.push({
            field: `devices.${i}`,
            message: `device "${name}" is disabled; pre-flight reads enabled devices only`,
          });
        } else deviceIds!.add(r.id);
      });
    }
    if (tags !== undefined) {
      const carried = new Set(rows.flatMap((r) => r.tags ?? []));
      tags.forEach((t, i) => {
        if (!carried.has(t)) {
          errors.push({ field: `tags.${i}`, message: `unknown tag "${t}": no device carries it` });
        }
      });
      const tagged = new Set(
        rows.filter((r) => r.enabled && tags.every((t) => (r.tags ?? []).includes(t))).map((r) => r.id),
      );
      deviceIds = deviceIds ? new Set([...deviceIds].filter((id) => tagged.has(id))) : tagged;
    }
  }
  if (errors.length) {
    throw new InvalidInputError(errors.map((e) => `"${e.field}": ${e.message}`).join("; "), { errors });
  }
  return {
    deviceIds,
    checkIds,
    given: { devices: devices ?? null, checks: checks ?? null, tags: tags ?? null },
  };
}

/**
 * Evaluate the latest stored snapshots against a plan (spec 4.8).
 *
 * - Read-only, through {@link readLab}: at most three SELECTs whatever the number of checks and devices,
 *   in one read-only REPEATABLE READ transaction; only the (device, label) pairs a check applies to are
 *   fetched, and only the payloads not in {@link payloadCache}. It never collects, never contacts a
 *   device, never writes.
 * - Each distinct payload (by SHA-256) is parsed and frozen once, when a check first reads it, and shared
 *   by every check and device that reads it, in this and later pre-flights (kept in {@link payloadCache});
 *   evidence cites each device's own snapshot.
 * - Enabled devices only; one result per (check, device) the check applies to, checks in registry order,
 *   devices by hostname.
 * - `pass` is true only when at least one check ran and every check passed: a skipped check (no snapshot)
 *   means the lab is not known to be ready, so it makes `pass` false too.
 * - A check that throws gives an `error` result (counted in `checksFailed`), never an exception here.
 * - `opts.asOf`: the lab as of a past moment (newest snapshot at or before it per device and label, checks
 *   judging time against it); `opts.selection`: only some devices and checks ({@link resolveSelection}),
 *   and `pass` false when the selection left out anything the plan evaluates.
 *
 * @example
 * ```ts
 * import type { Kysely } from "kysely";
 * import type { Database } from "../db/schema.ts";
 * import type { Registry } from "../registry.ts";
 * declare const db: Kysely<Database>, registry: Registry;
 * const r = await runPreflight(db, registry, registry.plan("ngfw-throughput-decrypt-on")!);
 * console.log(r.summary); // "9/9 checks passed — ready for ngfw-throughput-decrypt-on"
 * ```
 */
export async function runPreflight(
  db: Kysely<Database>,
  registry: Registry,
  plan: Plan,
  now: Date = new Date(),
  opts: PreflightOptions = {},
): Promise<PreflightResult> {
  if (registry.checks.length === 0) return summarize(plan, [], now, { asOf: opts.asOf });
  const preflight = preflightOf(registry, plan, opts.selection);
  return preflight.evaluate(await readLab(db, [preflight.wants], { asOf: opts.asOf }), now, opts.asOf);
}

/**
 * A dry run of {@link runPreflight}: which (device, check, label) triples it would evaluate and which
 * snapshot each would read, without reading a payload or evaluating a check (two SELECTs).
 */
export async function planPreflight(
  db: Kysely<Database>,
  registry: Registry,
  plan: Plan,
  now: Date = new Date(),
  opts: PreflightOptions = {},
): Promise<PreflightPlan> {
  const preflight = preflightOf(registry, plan, opts.selection);
  const read = await readLab(db, [preflight.wants], { asOf: opts.asOf, payloads: false });
  return preflight.dryRun(read, now, opts.asOf);
}

/**
 * The snapshot a check evaluates (a fresh object per evaluation), whose `payload` is an accessor: the
 * shared frozen value, produced on first read (`snapshot-fresh` reads only `collectedAt`), or what the
 * check assigned to its own copy.
 */
function lazySnapshot(
  s: Latest,
  device: CheckDevice,
  label: string,
  payloadOf: (sha: string) => unknown,
): CheckSnapshot {
  let own: { value: unknown } | null = null;
  return {
    id: s.id,
    deviceId: device.id,
    endpointLabel: label,
    vendor: device.vendor,
    get payload() {
      return own ? own.value : payloadOf(s.sha);
    },
    set payload(value: unknown) {
      own = { value };
    },
    payloadSha256: s.sha,
    collectedAt: new Date(s.at),
  };
}
