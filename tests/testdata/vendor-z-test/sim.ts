/**
 * The simulator of the drop-in fixture adapter (`mod.ts`): HTTPS on loopback, basic authentication, its
 * state changed by the lab's settings (`labControls`).
 *
 * @module
 */
import { type LabControls, type SimulatedDevice, startSimulator } from "@dutlab/core/testing";

export interface VendorSim extends SimulatedDevice {
  state: { ntp: string[]; rules: Array<{ name: string; action: string; enabled: boolean }> };
}

export async function startSimulatedDevice(): Promise<VendorSim> {
  const credentials = { username: "admin", password: "z-test-pw" };
  const state: VendorSim["state"] = {
    ntp: ["192.0.2.50"],
    rules: [{ name: "inspect-nothing", action: "no-decrypt", enabled: true }],
  };
  const started = Date.now();
  const sim = await startSimulator({
    name: "vendor-z-test",
    handler(req) {
      if (
        req.headers.get("authorization") !==
          `Basic ${btoa(`${credentials.username}:${credentials.password}`)}`
      ) {
        return Response.json({ error: "unauthorized" }, { status: 401 });
      }
      switch (new URL(req.url).pathname) {
        case "/api/cpu":
          return Response.json({ percent: 4 });
        case "/api/system":
          return Response.json({
            model: "Z-100",
            version: "1.2.3",
            serial: "Z0000001",
            uptimeSeconds: Math.floor((Date.now() - started) / 1000),
          });
        case "/api/time":
          return Response.json({ servers: state.ntp });
        case "/api/decryption/rules":
          return Response.json({ rules: state.rules });
        default:
          return Response.json({ error: "not found" }, { status: 404 });
      }
    },
  });
  return {
    sim,
    credentials,
    state,
    openSessions: () => 0,
    expireSessions: () => {},
    close: () => sim.close(),
    [Symbol.asyncDispose]: () => sim.close(),
  };
}

/** `decrypt` (a decrypt rule first, or none) and `ntp` (`on` restores the servers it started with). */
export function labControls(dev: VendorSim): LabControls {
  const ntp = [...dev.state.ntp];
  const decrypt = (on: boolean) => {
    dev.state.rules = dev.state.rules.filter((r) => r.action !== "decrypt");
    if (on) dev.state.rules.unshift({ name: "decrypt-lab", action: "decrypt", enabled: true });
  };
  return {
    settings: {
      decrypt: { values: ["on", "off"], apply: (v) => decrypt(v === "on") },
      ntp: { values: ["on", "off"], apply: (v) => void (dev.state.ntp = v === "on" ? [...ntp] : []) },
    },
    start: () => decrypt(true),
  };
}
