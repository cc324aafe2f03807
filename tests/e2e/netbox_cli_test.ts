/**
 * Issue 50 "Done when": `dutlab lab from-netbox` (a child process) against the local NetBox peer with several
 * sites, roles, platforms and tags writes a lab file that `lab diff` shows and `lab apply` applies; a re-sync
 * is an empty diff (`--exit-code` 0); two filters at once; unmapped devices listed; the NetBox token never in
 * any output. Against a real `serve` process, both backends.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { childEnv } from "../../core/harness/process.ts";
import { ServeProcess } from "../../core/harness/serve.ts";
import { TEST_ADMIN_TOKEN } from "../../core/harness/app.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../tools/netbox_peer.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const dec = new TextDecoder();

dbTest("dutlab lab from-netbox → diff → apply; a re-sync is an empty diff; unmapped listed", async (db) => {
  const work = await Deno.makeTempDir({ prefix: "dutlab-netbox-" });
  const svc = ServeProcess.overTestDb(db, work, { DUT_API_POLLER_DISABLE: "1" });
  const peer = await startNetBoxPeer({ devices: generatedDevices(40) });
  const seen: string[] = [];
  const run = async (args: string[]) => {
    const o = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", `${ROOT}deno.json`, `${ROOT}cli/main.ts`, ...args],
      cwd: work,
      clearEnv: true,
      env: childEnv({
        DUT_URL: svc.base,
        DUT_TOKEN: TEST_ADMIN_TOKEN,
        NETBOX_URL: peer.url,
        NETBOX_TOKEN: PEER_TOKEN,
        LAB_PASSWORD_VENDOR_A_NGFW: "pw-a",
        LAB_PASSWORD_VENDOR_B_NGFW: "pw-b",
        LAB_PASSWORD_VENDOR_C_NGFW: "pw-c",
        LAB_PASSWORD_VENDOR_A_SWITCH: "pw-s",
        LAB_PASSWORD_VENDOR_A_BMC: "pw-m",
      }, { remove: ["DUT_URL", "DUT_TOKEN", "NETBOX_URL", "NETBOX_TOKEN"] }),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const r = { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
    seen.push(r.stdout, r.stderr);
    return r;
  };
  try {
    // The example mapping, its URL from a template (the generated devices have no dutlab_url field).
    const example = await Deno.readTextFile(`${ROOT}examples/netbox-mapping.yaml`);
    await Deno.writeTextFile(
      `${work}/mapping.yaml`,
      example.replace(
        /^managementUrl: .*$/m,
        'managementUrl: { from: template, template: "https://{name}.{site}.lab.example:8443" }',
      ),
    );
    // Two devices no mapping covers.
    peer.setDevices([
      ...generatedDevices(40),
      { id: 901, name: "nb-router", site: "lab-a", role: "router", platform: "vendor-z-os" },
      { id: 902, name: "nb-spare", site: "lab-a", role: "switch", platform: null },
    ]);
    await svc.ready();
    const imp = await run(["lab", "from-netbox", "--mapping", "mapping.yaml", "-o", "nb.yaml"]);
    assert.equal(imp.code, 0, imp.stderr);
    assert.match(imp.stderr, /unmapped: NetBox device #901 nb-router: no vendor rule covers it/);
    assert.match(
      imp.stderr,
      /unmapped: NetBox device #902 nb-spare: no vendor rule covers it \(platform none/,
    );
    assert.match(
      imp.stderr,
      /NetBox 4\.5\.2 at http:\/\/127\.0\.0\.1:\d+: 42 device\(s\) in 1 page\(s\), 40 mapped/,
    );
    const file = await Deno.readTextFile(`${work}/nb.yaml`);
    assert.match(file, /^# Imported from NetBox http:\/\/127\.0\.0\.1:\d+ \(4\.5\.2\)/);

    const diff = await run(["lab", "diff", "-f", "nb.yaml"]);
    assert.equal(diff.code, 0, diff.stderr);
    assert.match(diff.stdout, /Plan: 40 to create, 0 to update, 0 to remove/);
    const apply = await run(["lab", "apply", "-f", "nb.yaml", "--yes"]);
    assert.equal(apply.code, 0, apply.stderr);
    assert.match(apply.stdout, /Applied: 40 created/);

    const again = await run(["lab", "from-netbox", "--mapping", "mapping.yaml", "-o", "nb.yaml"]);
    assert.equal(again.code, 0, again.stderr);
    const clean = await run(["lab", "diff", "-f", "nb.yaml", "--exit-code"]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /Plan: 0 to create, 0 to update, 0 to remove/);

    const two = await run([
      "lab",
      "from-netbox",
      "--mapping",
      "mapping.yaml",
      "--filter",
      "site=lab-c",
      "--filter",
      "tag=dut",
      "--json",
    ]);
    assert.equal(two.code, 0, two.stderr);
    const body = JSON.parse(two.stdout);
    const own = peer.devices.filter((d) =>
      (d.site as { slug: string }).slug === "lab-c" &&
      (d.tags as Array<{ slug: string }>).some((t) => t.slug === "dut")
    ).map((d) => d.name).sort();
    assert.deepEqual(body.lab.devices.map((d: { hostname: string }) => d.hostname).sort(), own);
    assert.ok(
      peer.requests.every((r) => r.authorization === `Bearer ${PEER_TOKEN}`),
      "the token on every request",
    );

    const strict = await run([
      "lab",
      "from-netbox",
      "--mapping",
      "mapping.yaml",
      "--strict",
      "-o",
      "strict.yaml",
    ]);
    assert.equal(strict.code, 1);
    await assert.rejects(Deno.stat(`${work}/strict.yaml`));
    const noToken = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--config",
        `${ROOT}deno.json`,
        `${ROOT}cli/main.ts`,
        "lab",
        "from-netbox",
        "-m",
        "mapping.yaml",
      ],
      clearEnv: true,
      env: childEnv({ DUT_URL: svc.base, DUT_TOKEN: TEST_ADMIN_TOKEN, NETBOX_URL: peer.url }, {
        remove: ["NETBOX_TOKEN"],
      }),
      cwd: work,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(noToken.code, 2);
    assert.match(dec.decode(noToken.stderr), /Set NETBOX_TOKEN/);

    await svc.stop();
    const all = seen.join("\n") + svc.log();
    assert.ok(!all.includes(PEER_TOKEN.slice(4)), "the NetBox token is in no output or log");
  } finally {
    await peer.close();
    await svc.stop().catch(() => {});
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
});
