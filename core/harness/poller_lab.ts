/** Shared helpers of the poller and snapshot tests: fixture devices, a runtime for startWorker, logs. */
import { configure, type LogRecord } from "@logtape/logtape";
import { sql } from "kysely";
import type { Db } from "../src/db/open.ts";
import type { Services } from "../src/runtime/services.ts";
import type { Runtime } from "../src/runtime/bootstrap.ts";
import type { DeviceView } from "../src/devices/store.ts";
import { toView } from "../src/devices/store.ts";
import { testServices } from "./app.ts";
import { fixtureModules, startFixtureDevice } from "../testing/fixture_modules.ts";
import type { LoadedModules } from "../src/registry.ts";

/** Test services over the fixture modules, with a short per-device time limit. */
export async function setup(db: Db, env: Record<string, string> = {}, modules?: LoadedModules) {
  return await testServices(db, modules ?? fixtureModules(), {
    DUT_POLL_DEVICE_TIMEOUT_SECONDS: "2",
    ...env,
  });
}

/** The fixture device, closed by `await using`. */
export async function fixtureDevice() {
  const d = await startFixtureDevice();
  return { ...d, [Symbol.asyncDispose]: () => d.sim.close() };
}

let seq = 0;

/** Register a fixture-fw device at `url` (basic auth admin / fixture-pass, TLS not verified). */
export async function addDevice(
  svc: Services,
  url: string,
  patch: Partial<Parameters<Services["devices"]["create"]>[0]> = {},
): Promise<string> {
  return await svc.devices.create({
    hostname: `fx-${++seq}-${crypto.randomUUID().slice(0, 6)}`,
    vendor: "fixture-fw",
    baseUrl: url,
    username: "admin",
    password: "fixture-pass",
    tlsVerifyMode: "insecure",
    pollIntervalSeconds: 30,
    enabled: true,
    ...patch,
  });
}

/** The device as the API shows it. */
export async function view(svc: Services, id: string): Promise<DeviceView> {
  return toView(await svc.devices.get(id));
}

/** Row count of a table, optionally for one device. */
export async function count(
  db: Db,
  table: "snapshots" | "snapshot_payloads" | "snapshot_latest",
  deviceId?: string,
): Promise<number> {
  const where = deviceId && table !== "snapshot_payloads" ? sql` where device_id = ${deviceId}` : sql``;
  const r = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}${where}`.execute(
    db.kysely,
  );
  return r.rows[0]!.n;
}

/** Make devices due again by moving their last poll back (all devices when `ids` is empty). */
export async function makeDue(db: Db, ids: string[] = []): Promise<void> {
  let q = db.kysely.updateTable("devices").set({
    last_poll_at: sql`now() - interval '1 hour'`,
  } as never);
  if (ids.length) q = q.where("id", "in", ids);
  await q.execute();
}

/** A Runtime over test services, for `startWorker`. */
export function runtimeOf(svc: Services): Runtime {
  // What is deferred (the worker's stop) runs at close; the services and database stay the test's.
  const stack = new AsyncDisposableStack();
  const close = () => stack.disposeAsync();
  return {
    config: svc.config,
    db: svc.db,
    registry: svc.registry,
    services: svc,
    defer: (stop) => void stack.defer(stop),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Wait until `cond` holds (checked every 20 ms); throws after `ms` naming `what`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`Timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A port on loopback where nothing listens. */
export function closedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Capture the `dutlab` log records of this test module in memory. */
export async function captureLogs(): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { memory: (r: LogRecord) => void records.push(r) },
    loggers: [
      { category: ["dutlab"], lowestLevel: "debug", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "error", sinks: [] },
    ],
  });
  return records;
}

/** The rendered message of a log record. */
export function messageOf(r: LogRecord): string {
  return r.message.map((m) => typeof m === "string" ? m : JSON.stringify(m)).join("");
}

/** SHA-256 hex with WebCrypto, independent of the service's own hash helpers. */
export async function webSha256Hex(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** An active test run written straight into the table (no plan, no pre-flight); its executionId. */
export async function insertActiveRun(db: Db): Promise<string> {
  const executionId = crypto.randomUUID();
  await db.kysely.insertInto("test_runs").values({
    execution_id: executionId,
    plan_identifier: "fixture-plan",
    plan_display_name: "Fixture plan",
    plan_catalog_version: 1,
    plan_json: "{}",
    plan_snapshot_sha256: "0".repeat(64),
    license_id: "LAB-INTERNAL",
    notes: null,
    status: "active",
    started_at: new Date(),
    start_state_json: "{}",
    preflight_json: "{}",
  } as never).execute();
  return executionId;
}
