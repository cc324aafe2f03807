/**
 * `@dutlab/adapter-vendor-a-switch`: a switch spoken to over NX-API REST (the DME object model),
 * token-cookie authentication (`aaaLogin` / `aaaRefresh` / `aaaLogout`), six snapshots per poll.
 *
 * @module
 */
import { type AdapterDefinition, type AdapterFacts, defineAdapter } from "@dutlab/core";
import { inventory, ntpServers } from "./_dme.ts";
import { asParkedLogin, LABELS, logout, NxApiSession } from "./_session.ts";
import { VOLATILE_PATHS } from "./_volatile.ts";

/** The `vendor-a-switch` adapter, typed so that its facts are known to callers. */
const adapter:
  & AdapterDefinition
  & { facts: { ntpServers(payload: unknown): string[]; inventory: AdapterFacts["inventory"] } } =
    defineAdapter({
      vendorKey: "vendor-a-switch",
      displayName: "Vendor A switch (NX-API REST)",
      coreVersion: "^1.0.0",
      deviceRoles: ["switch"],
      labels: LABELS,
      facts: { ntpServers, inventory },
      inventoryLabel: "system_info",
      volatilePaths: VOLATILE_PATHS,
      create: (ctx) => new NxApiSession(ctx),
      async release(ctx, parked) {
        const s = asParkedLogin(parked);
        if (s) await logout(ctx.http, s);
      },
    });

export default adapter;
