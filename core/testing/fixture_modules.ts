/**
 * A tiny fictional vendor (`fixture-fw`) and check, for core tests that must not depend on real adapters.
 * The device speaks a minimal JSON API with HTTP basic auth; tests change `state` between polls.
 */
import {
  type AdapterDefinition,
  type CheckDefinition,
  defineAdapter,
  defineCheck,
  definePlugin,
  DeviceError,
  type PluginDefinition,
} from "../mod.ts";
import type { LoadedModules } from "../src/registry.ts";
import { type Simulator, startSimulator } from "./simulator.ts";

/** The fictional `fixture-fw` adapter (roles `ngfw` and `switch`; labels system_info, ntp_config, decrypt_policy). */
export const fixtureAdapter: AdapterDefinition & {
  labels: readonly ["system_info", "ntp_config", "decrypt_policy"];
} = defineAdapter({
  vendorKey: "fixture-fw",
  displayName: "Fixture firewall",
  coreVersion: "^1.0.0",
  // "switch" too, so that core tests can register devices of two roles with one fictional vendor.
  deviceRoles: ["ngfw", "switch"],
  labels: ["system_info", "ntp_config", "decrypt_policy"],
  inventoryLabel: "system_info",
  facts: {
    inventory: (p) => {
      const o = p as Record<string, unknown>;
      const str = (k: string) => {
        const v = o?.[k];
        if (v !== undefined && typeof v !== "string") throw new Error(`system_info ${k} is not a string`);
        return v ?? null;
      };
      return { model: str("model"), softwareVersion: str("version"), serialNumber: str("serial") };
    },
    ntpServers: (p) => {
      const s = (p as { servers?: unknown }).servers;
      if (!Array.isArray(s)) throw new Error("ntp_config payload has no servers array");
      return s as string[];
    },
    decryptRuleCount: (p) => {
      const r = (p as { rules?: unknown }).rules;
      if (!Array.isArray(r)) throw new Error("decrypt_policy payload has no rules array");
      return r.length;
    },
  },
  create(ctx) {
    const auth = {
      authorization: `Basic ${btoa(`${ctx.credentials.username}:${ctx.credentials.password}`)}`,
    };
    const get = async (path: string) => {
      const r = await ctx.http.request({ path, headers: auth });
      if (r.status === 401 || r.status === 403) {
        throw new DeviceError("auth_failed", `Login refused: HTTP ${r.status}`);
      }
      if (r.status >= 400) throw new DeviceError("http_error", `GET ${path} answered HTTP ${r.status}`);
      return r.json();
    };
    return {
      async testConnection() {
        const c = await get("/api/cpu") as { cpu: number };
        return { cpuDetail: `CPU ${c.cpu}% from GET /api/cpu`, cpuPercent: c.cpu };
      },
      async collectAll() {
        return [
          { label: "system_info", payload: await get("/api/system") },
          { label: "ntp_config", payload: await get("/api/ntp") },
          { label: "decrypt_policy", payload: await get("/api/decrypt") },
        ];
      },
      close: () => Promise.resolve(),
    };
  },
});

/** The fixture check `fixture-ntp`: at least one NTP server. */
export const fixtureCheck: CheckDefinition<"ntpServers"> = defineCheck({
  id: "fixture-ntp",
  coreVersion: "^1.0.0",
  description: "Fixture: at least one NTP server",
  label: "ntp_config",
  needs: ["ntpServers"],
  evaluate: (s, _p, { facts }) => {
    const n = facts.ntpServers(s.payload).length;
    return { pass: n > 0, detail: `${n} server(s)` };
  },
});

/** The fixture plan catalog: one plan, `fixture-plan`, selecting `fixture-fw` firewalls. */
export const fixturePlugin: PluginDefinition & Required<Pick<PluginDefinition, "planCatalog">> = definePlugin(
  {
    name: "fixture-plans",
    coreVersion: "^1.0.0",
    planCatalog: {
      catalogVersion: 1,
      plans: [{
        identifier: "fixture-plan",
        displayName: "Fixture plan",
        description: "for tests",
        tlsDecrypt: "on",
        sloTargetP99Ms: 100,
        maxErrorRatePct: 1,
        deploymentMode: "inline",
        phases: [{ name: "steady", durationS: 60, load: { rps: 10 } }],
        vendors: ["fixture-fw"],
        deviceRoles: ["ngfw"],
        parameters: {},
      }],
    },
  },
);

/** Modules for core tests: the fixture adapter, check and plan catalog, plus a vendor without adapter. */
export function fixtureModules(extra: Partial<LoadedModules> = {}): LoadedModules {
  return {
    adapters: [
      { name: "@dutlab/adapter-fixture-fw", version: "0.0.1", module: fixtureAdapter },
      ...(extra.adapters ?? []),
    ],
    checks: [
      { name: "@dutlab/check-fixture-ntp", version: "0.0.1", module: fixtureCheck },
      ...(extra.checks ?? []),
    ],
    plugins: [
      { name: "@dutlab/plugin-fixture-plans", version: "0.0.1", module: fixturePlugin },
      ...(extra.plugins ?? []),
    ],
    vendorsWithoutAdapter: [
      { key: "vendor-c-ngfw", displayName: "Vendor C" },
      ...(extra.vendorsWithoutAdapter ?? []),
    ],
  };
}

/**
 * Start the fixture device (basic auth admin / `state.password`): its simulator and its state, which a test
 * changes between polls.
 */
export async function startFixtureDevice(): Promise<{
  sim: Simulator;
  state: {
    /** The NTP servers `/api/ntp` lists. */
    ntp: string[];
    /** How many decrypt rules `/api/decrypt` lists. */
    decryptRules: number;
    /** When true, every request hangs (a device that stops answering). */
    hang: boolean;
    /** The password basic auth accepts (user `admin`). */
    password: string;
    /** The CPU percentage `/api/cpu` answers. */
    cpu: number;
    /** The `system_info` answer (default: model FX-1000, serial FX123, version 1.2.3). */
    system?: unknown;
  };
}> {
  const state: Awaited<ReturnType<typeof startFixtureDevice>>["state"] = {
    ntp: ["10.0.0.1"],
    decryptRules: 1,
    hang: false,
    password: "fixture-pass",
    cpu: 7,
  };
  const sim = await startSimulator({
    name: "fixture-fw",
    handler: async (req) => {
      if (req.headers.get("authorization") !== `Basic ${btoa(`admin:${state.password}`)}`) {
        return new Response(null, { status: 401 });
      }
      if (state.hang) await new Promise(() => {});
      const path = new URL(req.url).pathname;
      switch (path) {
        case "/api/cpu":
          return Response.json({ cpu: state.cpu });
        case "/api/system":
          return Response.json(state.system ?? { model: "FX-1000", serial: "FX123", version: "1.2.3" });
        case "/api/ntp":
          return Response.json({ servers: state.ntp });
        case "/api/decrypt":
          return Response.json({
            rules: Array.from({ length: state.decryptRules }, (_, i) => ({ id: i, action: "decrypt" })),
          });
      }
      return new Response(null, { status: 404 });
    },
  });
  return { sim, state };
}
