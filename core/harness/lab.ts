/**
 * The lab as the tests drive it, over whatever adapters are enabled: every enabled adapter's simulator
 * (`<package>/sim`) with its own lab settings (`labControls`), and what each shared setting demonstrates.
 * No vendor is named here: a new adapter whose `sim.ts` offers the shared settings joins every test built
 * on this file.
 */
import assert from "node:assert/strict";
import type { LoadedModules } from "@dutlab/core/runtime";
import type { AdapterDefinition, CheckDefinition, Plan } from "@dutlab/core";
import { checkApplies } from "../src/preflight/evaluate.ts";
import type { LabControls, SimulatedDevice } from "@dutlab/core/testing";

export const ON = "ngfw-throughput-decrypt-on";
export const OFF = "ngfw-throughput-decrypt-off";
export const HEALTH = "ngfw-throughput-decrypt-on-server-health";

/**
 * What a shared lab setting demonstrates: setting `fault` makes exactly `check` fail on that device under
 * `plan` (with a detail matching `detail`); setting `fix` (each of them in turn) makes it pass again. Every
 * device a check of this table applies to must offer the setting (README "Five-minute tour").
 */
export interface LabFault {
  fault: string;
  fix: string[];
  check: string;
  plan: string;
  detail: RegExp;
}

export const LAB_FAULTS: Record<string, LabFault[]> = {
  decrypt: [{
    fault: "off",
    fix: ["on"],
    check: "ngfw-decrypt-state-matches-plan",
    plan: ON,
    detail: /^the plan requires decrypt-on but no decrypt rules are configured$/,
  }],
  deploy: [
    {
      fault: "failed",
      fix: ["ok"],
      check: "ngfw-deploy-clean",
      plan: ON,
      detail: /^deployment state .+, \d+ pending change\(s\); expected DEPLOYED/,
    },
    {
      fault: "pending",
      fix: ["ok"],
      check: "ngfw-deploy-clean",
      plan: ON,
      detail: /[1-9]\d* pending change\(s\); (.+; )?deploy or discard the pending changes$/,
    },
  ],
  ha: [{
    fault: "failed",
    fix: ["standby", "active"],
    check: "ngfw-ha-state-sane",
    plan: ON,
    detail: /expected one of ACTIVE, STANDBY_READY, NEGOTIATION, JOIN\)$/,
  }],
  ntp: [{
    fault: "off",
    fix: ["on"],
    check: "ntp-source-configured",
    plan: ON,
    detail: /^no time server is configured$/,
  }],
  power: [{
    fault: "off",
    fix: ["on"],
    check: "bmc-power-on",
    plan: HEALTH,
    detail: /^system power state Off \(expected On\)$/,
  }],
  health: [{
    fault: "warning",
    fix: ["ok"],
    check: "bmc-health-ok",
    plan: HEALTH,
    detail: /health is Warning \(expected OK\)/,
  }],
};

/** The setting that demonstrates `check` (the inverse of {@link LAB_FAULTS}). */
export function settingFor(check: string): string | undefined {
  return Object.entries(LAB_FAULTS).find(([, fs]) => fs.some((f) => f.check === check))?.[0];
}

/** The vendor keys of the enabled adapters, in manifest order. */
export function enabledVendors(mods: LoadedModules): string[] {
  return mods.adapters.map((m) => (m.module as AdapterDefinition).vendorKey);
}

/** One simulated device of the lab: its vendor, simulator and lab settings. */
export interface LabSim {
  vendor: string;
  adapter: AdapterDefinition;
  dev: SimulatedDevice;
  controls: LabControls;
}

/**
 * Start one simulator per enabled adapter, as `deno task lab` does: `startSimulatedDevice()` and
 * `labControls(dev)` from the adapter's `sim.ts`, then its lab starting state (`start`).
 */
export async function startLabSims(mods: LoadedModules): Promise<LabSim[]> {
  const out: LabSim[] = [];
  try {
    for (const { name, module } of mods.adapters) {
      const adapter = module as AdapterDefinition;
      const sim = await import(`${name}/sim`) as {
        startSimulatedDevice(): Promise<SimulatedDevice>;
        labControls(dev: SimulatedDevice): LabControls;
      };
      assert.equal(typeof sim.labControls, "function", `${name}/sim exports labControls`);
      const dev = await sim.startSimulatedDevice();
      const controls = sim.labControls(dev);
      out.push({ vendor: adapter.vendorKey, adapter, dev, controls });
      await controls.start?.();
    }
  } catch (e) {
    await Promise.allSettled(out.map((s) => s.dev.close()));
    throw e;
  }
  return out;
}

/** The checks that apply to a device of `adapter` (its first role) under `plan`, by id. */
export function applying(
  checks: readonly CheckDefinition[],
  plan: Plan,
  adapter: AdapterDefinition,
  hostname = "h",
): string[] {
  const device = { id: "d", hostname, vendor: adapter.vendorKey, deviceRole: adapter.deviceRoles[0] ?? null };
  return checks.filter((c) => checkApplies(c, device, plan, adapter)).map((c) => c.id);
}

/** An adapter's simulator module, `<package>/sim`, as `deno task lab` loads it. */
export interface SimModule {
  startSimulatedDevice(opts?: { username?: string; password?: string }): Promise<SimulatedDevice>;
  labControls(dev: SimulatedDevice): LabControls;
}

/** One enabled adapter: its package name, vendor key, definition, and a loader for its simulator. */
export interface EnabledAdapter {
  name: string;
  vendor: string;
  adapter: AdapterDefinition;
  sim(): Promise<SimModule>;
}

/** The enabled adapters, in manifest order, whose definition satisfies `pred`. */
export function adaptersWhere(
  mods: LoadedModules,
  pred: (a: AdapterDefinition) => boolean,
): EnabledAdapter[] {
  return mods.adapters.map(({ name, module }) => {
    const adapter = module as AdapterDefinition;
    return {
      name,
      vendor: adapter.vendorKey,
      adapter,
      sim: () => import(`${name}/sim`) as Promise<SimModule>,
    };
  }).filter((a) => pred(a.adapter));
}

/** The first enabled adapter (manifest order) whose devices take `role` (e.g. `ngfw`, `switch`, `bmc`). */
export function adapterForRole(mods: LoadedModules, role: string): EnabledAdapter {
  const a = adaptersWhere(mods, (d) => d.deviceRoles.includes(role))[0];
  assert.ok(a, `an enabled adapter takes the device role ${role}`);
  return a;
}

/** A simulated device that also takes an API token: requests carry it, no login session is opened. */
export interface TokenSim extends SimulatedDevice {
  readonly url: string;
  tokenCredentials: { username: string; password: string };
}

/**
 * The first enabled adapter (manifest order) whose simulator offers API-token credentials
 * (`tokenCredentials`), so that many devices and several pollers share one simulator without login sessions;
 * `start()` starts one of its simulators in token mode (`username: "apitoken"`).
 */
export async function tokenSimAdapter(
  mods: LoadedModules,
): Promise<{ vendor: string; start(): Promise<TokenSim> }> {
  for (const a of adaptersWhere(mods, () => true)) {
    const sim = await a.sim();
    const start = () => sim.startSimulatedDevice({ username: "apitoken" }) as Promise<TokenSim>;
    const dev = await start();
    const offers = "tokenCredentials" in dev;
    await dev.close();
    if (offers) return { vendor: a.vendor, start };
  }
  throw new Error("no enabled adapter's simulator offers API-token credentials");
}

/**
 * A simulated device of `a` whose decryption the test switches through its lab setting `decrypt`, and whose
 * other lab settings it sets by name (`set("ntp", "off")`, as `deno task lab set` does).
 */
export async function startWithDecrypt(
  a: EnabledAdapter,
): Promise<
  SimulatedDevice & {
    decryption(on: boolean): Promise<void>;
    set(setting: string, value: string): Promise<void>;
  }
> {
  const sim = await a.sim();
  const dev = await sim.startSimulatedDevice();
  const { settings } = sim.labControls(dev);
  const set = async (setting: string, value: string) => {
    const s = settings[setting];
    assert.ok(s?.values.includes(value), `${a.name}/sim offers the lab setting ${setting}=${value}`);
    await s!.apply(value);
  };
  assert.ok(settings.decrypt, `${a.name}/sim offers the lab setting decrypt`);
  return Object.assign(dev, { decryption: (on: boolean) => set("decrypt", on ? "on" : "off"), set });
}
