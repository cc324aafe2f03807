import type { AdapterDefinition, AdapterFacts } from "./adapter.ts";
import type { Plan } from "./plan.ts";

/** The name of one adapter reading (a member of {@link AdapterFacts}), e.g. `haState`. */
export type FactName = keyof AdapterFacts;

/** What a consumer of snapshots needs from a device's adapter: a label it collects and facts it offers. */
export interface Capability {
  /** The snapshot label that must be collected. */
  label: string;
  /** The facts (adapter readings) that must be offered; none when absent. */
  needs?: readonly FactName[];
  /** Further labels that must be collected too. */
  alsoReads?: readonly string[];
}

/** The part of an adapter the capability test reads. */
export type AdapterCapabilities = Pick<AdapterDefinition, "labels" | "facts">;

/**
 * Whether an adapter serves a capability: it collects the label and offers every fact needed. No adapter
 * (a vendor without an enabled one) serves nothing. The one test behind check applicability, the run's
 * firewalls and controllers, and the boot report of checks no adapter serves.
 *
 * @example
 * ```ts
 * const firewall = {
 *   labels: ["system_info", "ha_status"],
 *   facts: { haState: () => ({ raw: "HA_ACTIVE_NODE", mapped: "ACTIVE" as const }) },
 * };
 * serves(firewall, { label: "ha_status", needs: ["haState"] }); // true: collects it and offers the reading
 * serves(firewall, { label: "ntp_config", needs: ["ntpServers"] }); // false
 * serves(undefined, { label: "system_info" }); // false: a vendor without an enabled adapter
 * ```
 */
export function serves(adapter: AdapterCapabilities | undefined, need: Capability): boolean {
  if (!adapter || !adapter.labels.includes(need.label)) return false;
  if (!(need.alsoReads ?? []).every((l) => adapter.labels.includes(l))) return false;
  return (need.needs ?? []).every((f) => typeof adapter.facts?.[f] === "function");
}

/**
 * Whether a plan selects a device: its role is one of the plan's `deviceRoles` and, when the plan narrows to
 * vendors (`vendors` present), its vendor is one of them; a plan without `vendors` selects by role alone. A
 * device stored without a role takes its adapter's default role (`defaultRole`); with neither, the role
 * does not narrow.
 *
 * @example
 * ```ts
 * const fw = { vendor: "vendor-x-ngfw", deviceRole: "ngfw" };
 * planSelects({ deviceRoles: ["ngfw", "switch"] }, fw); // true: any vendor of a role taking part
 * planSelects({ deviceRoles: ["ngfw"], vendors: ["vendor-a-ngfw"] }, fw); // false: the plan narrows
 * planSelects({ deviceRoles: ["bmc"] }, fw); // false
 * ```
 */
export function planSelects(
  plan: Pick<Plan, "vendors" | "deviceRoles">,
  device: { vendor: string; deviceRole: string | null },
  defaultRole: string | null = null,
): boolean {
  const role = device.deviceRole ?? defaultRole;
  const vendor = plan.vendors === undefined || plan.vendors.includes(device.vendor);
  return vendor && (role === null || plan.deviceRoles.includes(role));
}

/** A device that holds a TLS-decrypting firewall's policy: the run's notion of a firewall. */
export const FIREWALL: Capability = { label: "decrypt_policy", needs: ["decryptRuleCount"] };

/**
 * A server management controller: reports the power state of the host it manages. The run counts these
 * as the lab's servers (`topology.ucsCount`).
 */
export const CONTROLLER: Capability = { label: "system_info", needs: ["powerState"] };
