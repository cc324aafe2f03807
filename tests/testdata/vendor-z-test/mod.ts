/**
 * `@dutlab/adapter-vendor-z-test`: the sixth adapter of `tests/gate/dropin_vendor_test.ts`, a made-up firewall
 * speaking a small JSON API with HTTP basic authentication (no session). The test copies this folder to
 * `adapters/vendor-z-test/` of a temporary copy of the workspace, with nothing else but the steps of the
 * README's "Adding an adapter", and runs the gate's drop-in tests there.
 *
 * @module
 */
import { defineAdapter, DeviceError } from "@dutlab/core";

const LABELS = ["system_info", "ntp_config", "decrypt_policy"] as const;
const PATHS: Record<(typeof LABELS)[number], string> = {
  system_info: "/api/system",
  ntp_config: "/api/time",
  decrypt_policy: "/api/decryption/rules",
};

function record(payload: unknown, label: string): Record<string, unknown> {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new Error(`Expected a ${label} object`);
  }
  return payload as Record<string, unknown>;
}

const str = (v: unknown) => typeof v === "string" ? v : null;

export default defineAdapter({
  vendorKey: "vendor-z-test",
  displayName: "Vendor Z test firewall (drop-in fixture)",
  coreVersion: "^1.0.0",
  deviceRoles: ["ngfw"],
  labels: LABELS,
  inventoryLabel: "system_info",
  volatilePaths: { system_info: ["/uptimeSeconds"] },
  facts: {
    ntpServers(payload) {
      const servers = record(payload, "ntp_config").servers;
      if (!Array.isArray(servers) || servers.some((s) => typeof s !== "string")) {
        throw new Error(`Expected "servers" to be an array of strings`);
      }
      return servers as string[];
    },
    decryptRuleCount(payload) {
      const rules = record(payload, "decrypt_policy").rules;
      if (!Array.isArray(rules)) throw new Error(`Expected "rules" to be an array`);
      return rules.filter((r) => r?.action === "decrypt" && r?.enabled === true).length;
    },
    inventory(payload) {
      const p = record(payload, "system_info");
      return { model: str(p.model), softwareVersion: str(p.version), serialNumber: str(p.serial) };
    },
  },
  create(ctx) {
    const authorization = `Basic ${btoa(`${ctx.credentials.username}:${ctx.credentials.password}`)}`;
    const get = async (path: string) => {
      const r = await ctx.http.request({ path, headers: { authorization } });
      if (r.status === 401 || r.status === 403) {
        throw new DeviceError("auth_failed", `GET ${path} refused the credentials: HTTP ${r.status}`);
      }
      if (r.status >= 400) throw new DeviceError("http_error", `GET ${path} answered HTTP ${r.status}`);
      return r.json();
    };
    return {
      async testConnection() {
        const cpu = (await get("/api/cpu") as { percent?: unknown }).percent;
        const cpuPercent = typeof cpu === "number" ? cpu : null;
        return { cpuDetail: `CPU ${cpuPercent ?? "?"}% (GET /api/cpu)`, cpuPercent };
      },
      async collectAll() {
        const out = [];
        for (const label of LABELS) out.push({ label, payload: await get(PATHS[label]) });
        return out;
      },
      close: () => Promise.resolve(),
    };
  },
});
