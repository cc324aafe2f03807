import assert from "node:assert/strict";
import type { AdapterDefinition, CollectedSnapshot } from "../src/adapter.ts";
import { releaseDeviceSession } from "../src/devices/connect.ts";
import { DeviceError } from "../src/errors.ts";
import { canonicalJson } from "../src/util/hash.ts";
import { SessionRegistry } from "../mod.ts";
import type { Simulator } from "./simulator.ts";
import { readFacts } from "./facts.ts";
import { startReplayServer } from "./replay.ts";
import { connectTo, testTarget } from "./connect.ts";

export { type ConnectedSim, connectTo } from "./connect.ts";

/** What an adapter's `sim.ts` hands the contract kit. */
export interface SimulatedDevice extends AsyncDisposable {
  /** The HTTPS simulator that plays the device. */
  sim: Simulator;
  /** Credentials the simulator accepts. */
  credentials: { username: string; password: string };
  /** Login sessions currently open on the simulated device. */
  openSessions(): number;
  /** Make every open session expire now (the device answers the next call as its vendor does). */
  expireSessions(): void;
  /** Stop the simulator. */
  close(): Promise<void>;
}

/** One poll cycle as the worker runs it: connect, collect all, close. */
export async function pollOnce(
  adapter: AdapterDefinition,
  device: SimulatedDevice,
  sessions: SessionRegistry,
  credentials = device.credentials,
): Promise<CollectedSnapshot[]> {
  await using conn = await connectTo(adapter, device.sim, { credentials, sessions });
  return await conn.session.collectAll();
}

/**
 * Log out whatever session the adapter parked for the default test device, the way a device delete or a
 * shutdown does (`releaseDeviceSession`); a logout that fails fails the test.
 */
export async function releaseParked(
  adapter: AdapterDefinition,
  device: SimulatedDevice,
  sessions: SessionRegistry,
) {
  const { error } = await releaseDeviceSession({
    adapter,
    device: testTarget(adapter, device.sim, { username: device.credentials.username }),
    sessions,
  });
  if (error !== undefined) throw error;
}

/**
 * The shared adapter contract: every adapter runs it against its own simulator.
 *
 * @example
 * ```ts
 * import type { AdapterDefinition } from "@dutlab/core";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * // startVendorXSim: the adapter's sim.ts start function.
 * async function example(adapter: AdapterDefinition, startVendorXSim: () => Promise<SimulatedDevice>) {
 *   Deno.test("vendor-x meets the adapter contract", (t) => runAdapterContract(t, { adapter, start: startVendorXSim }));
 * }
 * ```
 */
export async function runAdapterContract(
  t: Deno.TestContext,
  subject: {
    adapter: AdapterDefinition;
    start(): Promise<SimulatedDevice>;
    /**
     * Replay case folders (see `startReplayServer`) whose collected payloads every fact must read too;
     * with `credentials` when the case needs other ones than the simulator's (e.g. an API token).
     */
    cases?: Array<
      string | URL | { folder: string | URL; credentials: { username: string; password: string } }
    >;
  },
): Promise<void> {
  const { adapter } = subject;
  await using device = await subject.start();

  await t.step("declares its identity and labels", () => {
    assert.match(adapter.vendorKey, /^[a-z0-9]+(-[a-z0-9]+)*$/);
    assert.ok(adapter.displayName.length > 0);
    assert.ok(adapter.labels.length > 0);
    assert.equal(new Set(adapter.labels).size, adapter.labels.length, "labels are unique");
    for (const l of adapter.labels) assert.match(l, /^[a-z][a-z0-9_]*$/);
  });

  await t.step("testConnection authenticates and reads the CPU monitor", async () => {
    const sessions = new SessionRegistry();
    await using conn = await connectTo(adapter, device.sim, { credentials: device.credentials, sessions });
    const r = await conn.session.testConnection();
    assert.ok(r.cpuDetail.length > 0);
    assert.ok(r.cpuPercent === null || (r.cpuPercent >= 0 && r.cpuPercent <= 100));
    await conn.close();
    await releaseParked(adapter, device, sessions);
  });

  await t.step("collectAll returns one canonicalizable snapshot per label, in order", async () => {
    const sessions = new SessionRegistry();
    const snaps = await pollOnce(adapter, device, sessions);
    assert.deepEqual(snaps.map((s) => s.label), [...adapter.labels]);
    for (const s of snaps) assert.doesNotThrow(() => canonicalJson(s.payload));
    await releaseParked(adapter, device, sessions);
    assert.equal(device.openSessions(), 0, "no session left open after release");
  });

  await t.step("every declared fact reads the adapter's own collected payload without throwing", async () => {
    const declared = Object.keys(adapter.facts ?? {});
    if (adapter.facts?.inventory) {
      assert.ok(
        adapter.inventoryLabel && adapter.labels.includes(adapter.inventoryLabel),
        "inventoryLabel is one of the adapter's labels",
      );
    }
    const sessions = new SessionRegistry();
    const snaps = await pollOnce(adapter, device, sessions);
    await releaseParked(adapter, device, sessions);
    assert.deepEqual(Object.keys(readFacts(adapter, snaps)).sort(), declared.sort());
    for (const c of subject.cases ?? []) {
      const { folder, credentials } = typeof c === "string" || c instanceof URL
        ? { folder: c, credentials: device.credentials }
        : c;
      await using replay = await startReplayServer(folder);
      let caseSnaps;
      {
        await using conn = await connectTo(adapter, replay, { credentials });
        caseSnaps = await conn.session.collectAll();
      }
      assert.deepEqual(Object.keys(readFacts(adapter, caseSnaps)).sort(), declared.sort(), String(folder));
    }
  });

  await t.step("wrong credentials give auth_failed", async () => {
    const bad = { username: device.credentials.username, password: device.credentials.password + "-wrong" };
    await assert.rejects(
      () => pollOnce(adapter, device, new SessionRegistry(), bad),
      (e: unknown) => e instanceof DeviceError && e.status === "auth_failed",
    );
    assert.equal(device.openSessions(), 0);
  });

  await t.step("an expired session is renewed transparently", async () => {
    const sessions = new SessionRegistry();
    await pollOnce(adapter, device, sessions);
    device.expireSessions();
    const snaps = await pollOnce(adapter, device, sessions);
    assert.equal(snaps.length, adapter.labels.length);
    await releaseParked(adapter, device, sessions);
    assert.equal(device.openSessions(), 0);
  });

  await t.step("50 polls in a row leave no session open", async () => {
    const sessions = new SessionRegistry();
    let peak = 0;
    for (let i = 0; i < 50; i++) {
      await pollOnce(adapter, device, sessions);
      peak = Math.max(peak, device.openSessions());
    }
    assert.ok(peak <= 1, `at most one session open between polls (peak ${peak})`);
    await releaseParked(adapter, device, sessions);
    assert.equal(device.openSessions(), 0);
  });

  await t.step("a rotated certificate fails with tls_error and sends nothing", async () => {
    const sessions = new SessionRegistry();
    const pin = device.sim.fingerprint;
    await device.sim.rotateCertificate();
    device.sim.clearLog();
    await assert.rejects(
      async () => {
        await using conn = await connectTo(adapter, device.sim, {
          credentials: device.credentials,
          sessions,
          tlsVerifyMode: "self-signed",
          pinnedCertSha256: pin,
        });
        await conn.session.collectAll();
      },
      (e: unknown) => e instanceof DeviceError && e.status === "tls_error",
    );
    assert.equal(device.sim.requests.length, 0, "no request reached the device");
  });
}
