import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { canonicalJson, sha256Hex } from "../hash.ts";
import { asDeviceError, connectDevice } from "../connect.ts";
import { DeviceError, type PollStatus } from "../errors.ts";
import { credentialKeyOf, type DeviceRow, type DeviceStore } from "../devices.ts";
import type { TransportLimits } from "../transport/transport.ts";
import type { Metrics } from "./metrics.ts";
import { logger } from "../log.ts";
import { CredentialError } from "../credentials.ts";
import type { TlsVerifyMode } from "../adapter.ts";
import type { Registry } from "../registry.ts";
import { recordDecryptAlerts } from "../runs/alerts.ts";

/** Outcome of one poll cycle (spec 4.4 response). */
export interface PollResult {
  ok: boolean;
  lastPollStatus: PollStatus;
  lastPollError: string;
  lastPollAt: string;
  snapshots: number;
}

/** Re-checks, inside the write transaction, that this instance may still write poll results. */
export type WriteGuard = (tx: Kysely<Database>) => Promise<boolean>;

export class LostLockError extends Error {
  override name = "LostLockError";
}

const log = logger("poller");

/**
 * The poll cycle of spec 1.1 step 3, shared by the worker and the manual snapshot endpoint: decrypt the
 * credential, create the adapter, collect all, store each snapshot with its SHA-256, update the device,
 * log out and drop the credential. Snapshots and the device update are one transaction.
 * A device already being polled in this process is not polled twice: callers share the running cycle.
 */
export class PollService {
  #inflight = new Map<string, Promise<PollResult>>();

  constructor(
    private db: Kysely<Database>,
    private devices: DeviceStore,
    private registry: Registry,
    private metrics: Metrics,
    private limits: TransportLimits,
    private deviceTimeoutMs: number,
  ) {}

  /** Whether a poll of the device runs in this process now. */
  isPolling(deviceId: string): boolean {
    return this.#inflight.has(deviceId);
  }

  get inflightCount(): number {
    return this.#inflight.size;
  }

  /** Wait for every running poll (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inflight.values()]);
  }

  /** Poll a device now, or join the poll already running for it. */
  poll(deviceId: string, opts: { guard?: WriteGuard; signal?: AbortSignal } = {}): Promise<PollResult> {
    const running = this.#inflight.get(deviceId);
    if (running) return running;
    const p = this.#cycle(deviceId, opts).finally(() => this.#inflight.delete(deviceId));
    this.#inflight.set(deviceId, p);
    return p;
  }

  async #cycle(deviceId: string, opts: { guard?: WriteGuard; signal?: AbortSignal }): Promise<PollResult> {
    const started = performance.now();
    const row = await this.devices.get(deviceId);
    const reg = this.registry.adapters.get(row.vendor);
    let outcome: { status: PollStatus; error: string; snapshots: Array<{ label: string; payload: unknown }> };
    const timeout = AbortSignal.timeout(this.deviceTimeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    try {
      if (!reg) throw new DeviceError("adapter_error", `No adapter is enabled for vendor "${row.vendor}"`);
      let password: string | null = await this.devices.decryptPassword(row).catch((e) => {
        throw e instanceof CredentialError ? new DeviceError("credential_error", e.message) : e;
      });
      const conn = await connectDevice({
        adapter: reg.adapter,
        device: deviceTarget(row),
        credentials: { username: row.username, password: password! },
        credentialKey: await credentialKeyOf(row),
        sessions: this.devices.sessionRegistry,
        limits: this.limits,
        signal,
        onPin: (fp) => this.devices.pin(row.id, fp),
      });
      password = null; // the adapter session holds the only copy until the cycle ends
      try {
        const snapshots = await raceSignal(conn.session.collectAll(), signal, this.deviceTimeoutMs);
        const expected = reg.adapter.labels;
        if (snapshots.length !== expected.length || snapshots.some((s, i) => s.label !== expected[i])) {
          throw new DeviceError(
            "adapter_error",
            `Adapter returned labels [${snapshots.map((s) => s.label).join(", ")}], expected [${
              expected.join(", ")
            }]`,
          );
        }
        outcome = { status: "ok", error: `collected ${snapshots.length} snapshot(s)`, snapshots };
      } finally {
        await conn.close();
      }
    } catch (e) {
      const err = asDeviceError(e);
      outcome = { status: err.status, error: err.message, snapshots: [] };
    }
    const at = new Date();
    await this.#store(row, reg ? { name: reg.name, version: reg.version } : null, outcome, at, opts.guard);
    const seconds = (performance.now() - started) / 1000;
    this.metrics.polls.inc({ vendor: row.vendor, status: outcome.status });
    this.metrics.pollDuration.observe(seconds, { vendor: row.vendor });
    if (outcome.status === "ok") this.metrics.snapshotsStored.inc({}, outcome.snapshots.length);
    log.info("Polled {hostname} ({vendor}): {status} {detail} in {ms} ms", {
      hostname: row.hostname,
      vendor: row.vendor,
      status: outcome.status,
      detail: outcome.error,
      ms: Math.round(seconds * 1000),
    });
    return {
      ok: outcome.status === "ok",
      lastPollStatus: outcome.status,
      lastPollError: outcome.error,
      lastPollAt: at.toISOString(),
      snapshots: outcome.snapshots.length,
    };
  }

  async #store(
    row: DeviceRow,
    module: { name: string; version: string } | null,
    outcome: { status: PollStatus; error: string; snapshots: Array<{ label: string; payload: unknown }> },
    at: Date,
    guard?: WriteGuard,
  ) {
    const hashed = await Promise.all(outcome.snapshots.map(async (s) => {
      const text = canonicalJson(s.payload);
      return {
        label: s.label,
        text,
        sha256: await sha256Hex(text),
        size: new TextEncoder().encode(text).length,
      };
    }));
    await this.db.transaction().execute(async (tx) => {
      if (guard && !(await guard(tx))) throw new LostLockError("Poll lock lost; not writing poll results");
      const exists = await tx.selectFrom("devices").select("id").where("id", "=", row.id).forUpdate()
        .executeTakeFirst();
      if (!exists) return; // deleted while polling: nothing to record
      if (hashed.length) {
        // FOR SHARE: a run's finish (FOR UPDATE) waits for this commit, so its report lists these snapshots.
        const run = await tx.selectFrom("test_runs").select("execution_id").where("status", "=", "active")
          .forShare().executeTakeFirst();
        const unique = [...new Map(hashed.map((h) => [h.sha256, h])).values()];
        const inserted = await tx.insertInto("snapshot_payloads")
          .values(unique.map((h) => ({ sha256: h.sha256, payload: h.text, size_bytes: h.size })))
          .onConflict((oc) => oc.column("sha256").doNothing()).returning("sha256").execute();
        this.metrics.payloadsStored.inc({}, inserted.length);
        const rows = await tx.insertInto("snapshots").values(hashed.map((h) => ({
          device_id: row.id,
          endpoint_label: h.label,
          payload_sha256: h.sha256,
          collected_at: at,
          test_run_execution_id: run?.execution_id ?? null,
          adapter_module: module!.name,
          adapter_version: module!.version,
        }))).returning([sql<string>`id::text`.as("id"), "endpoint_label"]).execute();
        await tx.insertInto("snapshot_latest")
          .values(
            rows.map((r) => ({ device_id: row.id, endpoint_label: r.endpoint_label, snapshot_id: r.id })),
          )
          .onConflict((oc) =>
            oc.columns(["device_id", "endpoint_label"]).doUpdateSet({
              snapshot_id: sql`excluded.snapshot_id`,
            })
          )
          .execute();
        if (run) {
          await recordDecryptAlerts(tx, this.registry, run.execution_id, row, rows, outcome.snapshots, at);
        }
      }
      await tx.updateTable("devices").set({
        last_poll_at: at,
        last_poll_status: outcome.status,
        last_poll_error: outcome.error,
      }).where("id", "=", row.id).execute();
    });
  }
}

/** Device fields the connection layer needs. */
export function deviceTarget(row: DeviceRow) {
  return {
    id: row.id,
    hostname: row.hostname,
    vendor: row.vendor,
    deviceRole: row.device_role,
    baseUrl: row.base_url,
    username: row.username,
    tlsVerifyMode: row.tls_verify_mode as TlsVerifyMode,
    pinnedCertSha256: row.pinned_cert_sha256,
  };
}

/** Settle with a timeout error when the signal fires, even if the adapter ignores it. */
function raceSignal<T>(p: Promise<T>, signal: AbortSignal, ms: number): Promise<T> {
  if (signal.aborted) {
    return Promise.reject(new DeviceError("timeout", `Poll exceeded its time limit of ${ms} ms`));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DeviceError("timeout", `Poll exceeded its time limit of ${ms} ms`));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
