/**
 * `deno task lab`: start one device simulator per available vendor on loopback HTTPS and print each
 * one's URL, credentials and certificate fingerprint, with a ready `curl` to register it.
 * Runs until Ctrl-C. Options: `--json` prints one JSON line per device instead.
 */
import type { SimulatedDevice } from "@dutlab/core/testing";
import { modules } from "../modules.gen.ts";

const json = Deno.args.includes("--json");
const api = Deno.env.get("DUT_URL") ?? "http://localhost:8080";
const started: SimulatedDevice[] = [];
for (const { name, module } of modules.adapters) {
  const vendor = (module as { vendorKey: string }).vendorKey;
  let sim: SimulatedDevice;
  try {
    const mod = await import(`${name}/sim`) as { startSimulatedDevice(): Promise<SimulatedDevice> };
    sim = await mod.startSimulatedDevice();
  } catch (e) {
    console.error(`${vendor}: no simulator (${(e as Error).message})`);
    continue;
  }
  started.push(sim);
  const hostname = `lab-${vendor}`;
  const body = {
    hostname,
    vendor,
    baseUrl: sim.sim.url,
    username: sim.credentials.username,
    password: sim.credentials.password,
    tlsVerifyMode: "self-signed",
  };
  if (json) {
    console.log(
      JSON.stringify({ vendor, url: sim.sim.url, ...sim.credentials, sha256: sim.sim.fingerprint }),
    );
    continue;
  }
  console.log(`\n${vendor}  ${sim.sim.url}`);
  console.log(`  credentials  ${sim.credentials.username} / ${sim.credentials.password}`);
  console.log(`  certificate  sha256 ${sim.sim.fingerprint}`);
  console.log(
    `  register     curl -sS -X POST ${api}/api/admin/dut/devices -H "Authorization: Bearer $ADMIN_TOKEN" \\`,
  );
  console.log(`                 -H 'content-type: application/json' -d '${JSON.stringify(body)}'`);
}
if (!json) {
  console.log(
    `\n${started.length} simulator(s) running. The API token is in .data/secrets.json (adminToken) for`,
  );
  console.log(
    "an embedded `deno task serve`; export ADMIN_TOKEN=... then run the curl lines. Ctrl-C stops the lab.",
  );
}
const stop = async () => {
  await Promise.allSettled(started.map((s) => s.close()));
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
