/**
 * `deno task lab`: one device simulator per available vendor on loopback HTTPS, for trying dutlab without
 * hardware (README "Five-minute tour").
 *
 * - `deno task lab [--register] [--json]`: start the lab and print each simulator's URL, credentials,
 *   certificate fingerprint and a ready `curl` that registers it. Ports and certificates are kept in
 *   `<DUT_DATA_DIR>/lab/state.json` (default `./.data`), so a restarted lab answers on the same addresses
 *   with the same certificates and registered devices keep working (their pins stay valid). `--register`
 *   registers every lab device through the API, or updates it when a device of that hostname exists, so it
 *   can be repeated (never a 409). The API is `DUT_URL`, else `http://localhost:$PORT` (`PORT` default
 *   8080); the token is `ADMIN_TOKEN`, else `adminToken` of `<DUT_DATA_DIR>/secrets.json`.
 * - `deno task lab set <vendor> <key>=<value>...`: change a running lab's simulated device through the
 *   lab's control endpoint (loopback only, port in the state file). Every device takes `down=true|false`
 *   and `cert=rotate` (a new certificate: a pinned device then fails with `tls_error`); the other keys are
 *   the device's own, from `labControls` in its adapter's `sim.ts` (e.g. `decrypt=on|off`,
 *   `deploy=ok|pending|failed`, `ha=active|standby|failed`, `ntp=on|off`). The lab names no vendor. It prints
 *   the device as `show` does, without its password (`show` and `file --env` give the credentials).
 * - `deno task lab show`: the running lab's devices, the settings applied (`settings`) and the settings
 *   each accepts with their values (`controls`).
 * - `deno task lab file [--env]`: the running lab as a lab file (docs/lab-as-code.md; YAML, metadata.name
 *   `sim`), each simulator's password by reference (`env:LAB_PASSWORD_<VENDOR>`); `--env` prints instead the
 *   `export LAB_PASSWORD_…=…` lines that set them (the simulators' own, made-up passwords), for
 *   `eval "$(npx -y deno@2.9.6 task -q lab file --env)"`.
 *
 * Runs until Ctrl-C.
 * @module
 */
import { certificates, type LabControls, type SimulatedDevice } from "@dutlab/core/testing";
import { modules } from "../modules.gen.ts";

const dataDir = Deno.env.get("DUT_DATA_DIR") || "./.data";
const stateFile = `${dataDir}/lab/state.json`;
const apiUrl = (Deno.env.get("DUT_URL") || `http://localhost:${Deno.env.get("PORT") || "8080"}`).replace(
  /\/+$/,
  "",
);

interface LabState {
  controlPort?: number;
  devices: Record<string, { port: number; certPem: string; keyPem: string }>;
}

async function readState(): Promise<LabState> {
  try {
    return JSON.parse(await Deno.readTextFile(stateFile));
  } catch {
    return { devices: {} };
  }
}

async function writeState(s: LabState): Promise<void> {
  await Deno.mkdir(`${dataDir}/lab`, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(stateFile, JSON.stringify(s, null, 2) + "\n", { mode: 0o600 });
}

interface LabDevice {
  vendor: string;
  hostname: string;
  dev: SimulatedDevice;
  /** The device's own settings, from its adapter's `sim.ts` (`labControls`). */
  controls: LabControls;
  settings: Record<string, string>;
}

/** `a`, `a or b`, `a, b or c` */
function either(values: readonly string[]): string {
  return values.length < 2 ? values.join("") : `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
}

/**
 * Apply one setting: the generic `down` and `cert`, else one of the device's own (its `labControls`).
 * Returns an error message when the device has no such setting or refuses the value.
 */
async function apply(
  l: LabDevice,
  key: string,
  value: string,
  save: () => Promise<void>,
): Promise<string | null> {
  const bad = (allowed: readonly string[]) => `${l.vendor}: ${key} must be ${either(allowed)}`;
  if (key === "down") {
    if (value !== "true" && value !== "false") return bad(["true", "false"]);
    await l.dev.sim.setDown(value === "true");
  } else if (key === "cert") {
    if (value !== "rotate") return bad(["rotate"]);
    await l.dev.sim.rotateCertificate();
    await save();
    value = l.dev.sim.fingerprint;
  } else {
    const own = Object.keys(l.controls.settings);
    const control = Object.hasOwn(l.controls.settings, key) ? l.controls.settings[key] : undefined;
    if (!control) {
      return `${l.vendor}: no setting ${JSON.stringify(key)}; ${
        own.length ? `one of ${own.join(", ")}` : "only down and cert"
      }`;
    }
    if (!control.values.includes(value)) return bad(control.values);
    try {
      await control.apply(value);
    } catch (e) {
      return `${l.vendor}: ${key}=${value} failed (${(e as Error).message})`;
    }
  }
  l.settings[key] = value;
  return null;
}

// ---------------------------------------------------------------- client commands

/** The environment variable a lab file names for a simulator's password. */
const passwordVar = (vendor: string) => `LAB_PASSWORD_${vendor.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;

if (Deno.args[0] === "file") {
  const st = await readState();
  const devices = st.controlPort
    ? await fetch(`http://127.0.0.1:${st.controlPort}/devices`).then((r) => r.json()).catch(() => null)
    : null;
  if (!Array.isArray(devices)) {
    console.error("The lab is not running: start it with `deno task lab`");
    Deno.exit(2);
  }
  const sims = devices as Array<
    { vendor: string; hostname: string; url: string; username: string; password: string }
  >;
  if (Deno.args.includes("--env")) {
    for (const d of sims) {
      console.log(`export ${passwordVar(d.vendor)}='${d.password.replaceAll("'", "'\\''")}'`);
    }
    Deno.exit(0);
  }
  const { stringify } = await import("yaml");
  console.log(
    stringify({
      apiVersion: "dutlab/v1",
      kind: "Lab",
      metadata: { name: "sim" },
      defaults: { tlsVerifyMode: "self-signed", pollIntervalSeconds: 30, tags: ["lab:sim"] },
      credentials: Object.fromEntries(
        sims.map((d) => [d.vendor, { username: d.username, password: `env:${passwordVar(d.vendor)}` }]),
      ),
      devices: sims.map((d) => ({
        hostname: d.hostname,
        vendor: d.vendor,
        baseUrl: d.url,
        credential: d.vendor,
      })),
      testbeds: { sim: { description: "every simulated device", tags: ["lab:sim"] } },
    }, { lineWidth: 0 }).trimEnd(),
  );
  Deno.exit(0);
}

if (Deno.args[0] === "set" || Deno.args[0] === "show") {
  const st = await readState();
  if (!st.controlPort) {
    console.error(`No lab state in ${stateFile}: start the lab first with \`deno task lab\``);
    Deno.exit(2);
  }
  const [cmd, vendor, ...pairs] = Deno.args;
  let res: Response;
  try {
    res = cmd === "show"
      ? await fetch(`http://127.0.0.1:${st.controlPort}/devices`)
      : await fetch(`http://127.0.0.1:${st.controlPort}/devices/${encodeURIComponent(vendor ?? "")}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(Object.fromEntries(pairs.map((p) => {
          const i = p.indexOf("=");
          return i > 0 ? [p.slice(0, i), p.slice(i + 1)] : [p, ""];
        }))),
      });
  } catch {
    console.error(
      `The lab is not running (no answer on 127.0.0.1:${st.controlPort}): start it with \`deno task lab\``,
    );
    Deno.exit(2);
  }
  const body = await res.json();
  if (!res.ok) {
    console.error(body.error);
    Deno.exit(1);
  }
  // A setting changed is no occasion to print a secret (a terminal's scrollback, a CI log): `show` has it.
  if (cmd === "set") delete body.password;
  console.log(JSON.stringify(body));
  Deno.exit(0);
}

// ---------------------------------------------------------------- the lab

const json = Deno.args.includes("--json");
const register = Deno.args.includes("--register");
const st = await readState();
const lab: LabDevice[] = [];
const save = async () => {
  for (const l of lab) {
    st.devices[l.vendor] = {
      port: l.dev.sim.port,
      certPem: l.dev.sim.certificate.certPem,
      keyPem: l.dev.sim.certificate.keyPem,
    };
  }
  await writeState(st);
};

for (const { name, module } of modules.adapters) {
  const vendor = (module as { vendorKey: string }).vendorKey;
  let dev: SimulatedDevice;
  let controls: LabControls;
  try {
    const mod = await import(`${name}/sim`) as {
      startSimulatedDevice(): Promise<SimulatedDevice>;
      labControls?(dev: SimulatedDevice): LabControls;
    };
    dev = await mod.startSimulatedDevice();
    // Taken before any change: a setting's closure keeps the device's starting state (e.g. for `ntp=on`).
    controls = mod.labControls?.(dev) ?? { settings: {} };
  } catch (e) {
    console.error(`${vendor}: no simulator (${(e as Error).message})`);
    continue;
  }
  const kept = st.devices[vendor];
  if (kept) {
    const certificate = await certificates.fromPem(kept.certPem, kept.keyPem).catch(() => undefined);
    try {
      await dev.sim.relisten({ port: kept.port, certificate });
    } catch (e) {
      console.error(`${vendor}: port ${kept.port} is taken (${(e as Error).name}); using a new port`);
      await dev.sim.relisten({ port: 0, certificate });
    }
  }
  // The lab starts ready for a decrypt-on plan: each device puts itself in its lab starting state.
  await controls.start?.();
  lab.push({ vendor, hostname: `lab-${vendor}`, dev, controls, settings: {} });
}
await save();

// The control endpoint: loopback only, on the port kept in the state file.
const handler = async (req: Request): Promise<Response> => {
  const url = new URL(req.url);
  const view = (l: LabDevice) => ({
    vendor: l.vendor,
    hostname: l.hostname,
    url: l.dev.sim.url,
    username: l.dev.credentials.username,
    password: l.dev.credentials.password,
    sha256: l.dev.sim.fingerprint,
    down: l.dev.sim.down,
    settings: l.settings,
    // What `lab set` accepts for this device: its own settings, then the generic ones.
    controls: {
      ...Object.fromEntries(Object.entries(l.controls.settings).map(([k, c]) => [k, [...c.values]])),
      down: ["true", "false"],
      cert: ["rotate"],
    },
  });
  if (req.method === "GET" && url.pathname === "/devices") return Response.json(lab.map(view));
  const target = /^\/devices\/([^/]+)$/.exec(url.pathname)?.[1];
  if (req.method === "POST" && target !== undefined) {
    const l = lab.find((d) =>
      d.vendor === decodeURIComponent(target) || d.hostname === decodeURIComponent(target)
    );
    if (!l) {
      return Response.json({
        error: `unknown lab device ${target}; one of ${lab.map((d) => d.vendor).join(", ")}`,
      }, {
        status: 404,
      });
    }
    let body: Record<string, unknown>;
    try {
      body = await req.json();
    } catch {
      return Response.json({ error: "body must be a JSON object of settings" }, { status: 400 });
    }
    if (Object.keys(body).length === 0) {
      return Response.json({ error: "no setting given (key=value)" }, { status: 400 });
    }
    for (const [k, v] of Object.entries(body)) {
      const err = await apply(l, k, String(v), save);
      if (err) return Response.json({ error: err }, { status: 400 });
    }
    console.error(`lab: ${l.vendor} ${Object.entries(body).map(([k, v]) => `${k}=${v}`).join(" ")}`);
    const { password: _, ...changed } = view(l);
    return Response.json(changed);
  }
  return Response.json({ error: "not found" }, { status: 404 });
};
const listen = (port: number) => Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, handler);
let control: Deno.HttpServer<Deno.NetAddr>;
try {
  control = listen(st.controlPort ?? 0);
} catch {
  control = listen(0);
}
st.controlPort = control.addr.port;
await save();

for (const l of lab) {
  const body = {
    hostname: l.hostname,
    vendor: l.vendor,
    baseUrl: l.dev.sim.url,
    username: l.dev.credentials.username,
    password: l.dev.credentials.password,
    tlsVerifyMode: "self-signed",
  };
  if (json) {
    console.log(
      JSON.stringify({
        vendor: l.vendor,
        url: l.dev.sim.url,
        ...l.dev.credentials,
        sha256: l.dev.sim.fingerprint,
      }),
    );
    continue;
  }
  console.log(`\n${l.vendor}  ${l.dev.sim.url}`);
  console.log(`  credentials  ${l.dev.credentials.username} / ${l.dev.credentials.password}`);
  console.log(`  certificate  sha256 ${l.dev.sim.fingerprint}`);
  console.log(
    `  register     curl -sS -X POST ${apiUrl}/api/admin/dut/devices -H "Authorization: Bearer $ADMIN_TOKEN" \\`,
  );
  console.log(`                 -H 'content-type: application/json' -d '${JSON.stringify(body)}'`);
}
if (!json) {
  console.log(
    `\n${lab.length} simulator(s) running; state kept in ${stateFile}; control on 127.0.0.1:${st.controlPort}.`,
  );
  console.log(
    "Register them all with `npx -y deno@2.9.6 task lab --register` (or the curl lines); change one with",
  );
  console.log(
    "`npx -y deno@2.9.6 task lab set vendor-a-ngfw decrypt=off` (see README). Ctrl-C stops the lab.",
  );
}

/** The admin token: ADMIN_TOKEN, else the embedded service's generated one. */
async function token(): Promise<string | null> {
  const t = Deno.env.get("ADMIN_TOKEN");
  if (t) return t;
  try {
    return JSON.parse(await Deno.readTextFile(`${dataDir}/secrets.json`)).adminToken ?? null;
  } catch {
    return null;
  }
}

/** Register every lab device, or update the one already registered under its hostname (idempotent). */
async function registerAll(): Promise<boolean> {
  const tok = await token();
  if (!tok) {
    console.error(
      `lab --register: no token: set ADMIN_TOKEN or start \`deno task serve\` first (${dataDir}/secrets.json)`,
    );
    return false;
  }
  const headers = { authorization: `Bearer ${tok}`, "content-type": "application/json" };
  let existing: Array<{ id: string; hostname: string }> = [];
  try {
    const r = await fetch(`${apiUrl}/api/admin/dut/devices`, { headers });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    existing = (await r.json()).devices;
  } catch (e) {
    console.error(
      `lab --register: cannot list devices at ${apiUrl} (${(e as Error).message}); is the service running?`,
    );
    return false;
  }
  let ok = true;
  for (const l of lab) {
    const body = {
      hostname: l.hostname,
      vendor: l.vendor,
      baseUrl: l.dev.sim.url,
      username: l.dev.credentials.username,
      password: l.dev.credentials.password,
      tlsVerifyMode: "self-signed",
      pollIntervalSeconds: 30,
    };
    const found = existing.find((d) => d.hostname === l.hostname);
    const r = await fetch(
      found ? `${apiUrl}/api/admin/dut/devices/${found.id}` : `${apiUrl}/api/admin/dut/devices`,
      { method: found ? "PATCH" : "POST", headers, body: JSON.stringify(body) },
    );
    const text = await r.text();
    if (!r.ok) ok = false;
    console.log(
      `${found ? "updated" : "registered"} ${l.hostname}: HTTP ${r.status}${r.ok ? "" : ` ${text}`}`,
    );
  }
  return ok;
}

if (register && !(await registerAll())) Deno.exitCode = 1;

const stop = async () => {
  await control.shutdown();
  await Promise.allSettled(lab.map((l) => l.dev.close()));
  Deno.exit(Deno.exitCode ?? 0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
