import { parse as parseYaml, stringify as toYaml } from "yaml";
import { dirname, isAbsolute, resolve } from "node:path";
import type { components } from "./generated/dutlab-api.ts";
import type { Command, Ctx } from "./_command.ts";
import { exitFor, ok, problemLine, type Service } from "./_client.ts";
import { CliError, EXIT } from "./_exit.ts";
import {
  bounded,
  boundedNames,
  type Colour,
  note,
  out,
  printJson,
  readIn,
  SCREENFUL,
  writeOut,
} from "./_output.ts";

type LabPlan = components["schemas"]["LabPlan"];
type PlanEntry = LabPlan["devices"][number];
type TestbedEntry = LabPlan["testbeds"][number];
type Testbed = components["schemas"]["Testbed"];
type Device = components["schemas"]["Device"];
interface FieldError {
  field: string;
  message: string;
}

/** A lab file read and its secrets resolved on this side (never sent anywhere but the plan and apply routes). */
interface Loaded {
  file: string;
  lab: Record<string, unknown>;
  secrets: Record<string, string>;
  /** Errors of the client's own: a secret that does not resolve, a secret file readable by others. */
  errors: FieldError[];
}

const str = (v: unknown) => typeof v === "string" ? v : undefined;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const credPath = (name: string) =>
  /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
    ? `$.credentials.${name}.password`
    : `$.credentials[${JSON.stringify(name)}].password`;

/** Reads a lab file (YAML or JSON) and resolves the password reference of each credential a device uses. */
async function load(ctx: Ctx): Promise<Loaded> {
  const file = str(ctx.flags.file);
  if (file === undefined) throw ctx.usage("Missing -f FILE (the lab file, YAML or JSON)");
  const text = await readIn(file, "-f");
  let lab: unknown;
  try {
    lab = parseYaml(text, { prettyErrors: false });
  } catch (e) {
    throw new CliError(
      `-f ${JSON.stringify(file)} is neither YAML nor JSON: ${(e as Error).message.split("\n")[0]}`,
      EXIT.usage,
    );
  }
  if (!isObject(lab)) {
    throw new CliError(`-f ${JSON.stringify(file)} does not hold a lab (an object)`, EXIT.usage);
  }
  const errors: FieldError[] = [];
  const secrets: Record<string, string> = {};
  const creds = isObject(lab.credentials) ? lab.credentials : {};
  const defaults = isObject(lab.defaults) ? lab.defaults : {};
  const used = new Set<string>();
  for (const d of Array.isArray(lab.devices) ? lab.devices : []) {
    const c = str(isObject(d) ? d.credential : undefined) ?? str(defaults.credential);
    if (c !== undefined) used.add(c);
  }
  const base = file === "-" ? Deno.cwd() : dirname(resolve(file));
  for (const name of used) {
    const cred = creds[name];
    const ref = isObject(cred) ? str(cred.password) : undefined;
    if (ref === undefined) continue; // the service names what is missing
    const at = credPath(name);
    if (/^env:[A-Za-z_][A-Za-z0-9_]*$/.test(ref)) {
      const v = Deno.env.get(ref.slice(4));
      if (v === undefined || v === "") {
        errors.push({ field: at, message: `the environment variable ${ref.slice(4)} is not set` });
      } else secrets[name] = v;
    } else if (/^file:[^/\s]\S*$/.test(ref)) {
      const rel = ref.slice(5);
      const path = resolve(base, rel);
      if (isAbsolute(rel)) continue;
      try {
        const st = await Deno.stat(path);
        if (st.mode !== null && (st.mode & 0o077) !== 0) {
          errors.push({
            field: at,
            message: `${JSON.stringify(rel)} is readable by its group or others (chmod 600 it)`,
          });
          continue;
        }
        const v = (await Deno.readTextFile(path)).replace(/\r?\n$/, "");
        if (v === "") errors.push({ field: at, message: `${JSON.stringify(rel)} is empty` });
        else secrets[name] = v;
      } catch (e) {
        errors.push({
          field: at,
          message: `cannot read ${JSON.stringify(rel)} (${
            e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).name
          })`,
        });
      }
    }
    // Any other value (a pasted password) is never sent: the service's schema names it.
  }
  return { file, lab, secrets, errors };
}

/** The request body of the plan and apply routes. */
function request(ctx: Ctx, l: Loaded): Record<string, unknown> {
  const prune = str(ctx.flags.prune);
  if (prune !== undefined && prune !== "disable" && prune !== "delete") {
    throw ctx.usage(`--prune must be disable or delete, not ${JSON.stringify(prune)}`);
  }
  // A credential the file holds as a bare string is not a reference: keep it out of the request.
  const lab = structuredClone(l.lab);
  if (isObject(lab.credentials)) {
    for (const c of Object.values(lab.credentials)) {
      if (isObject(c) && typeof c.password === "string" && !/^(env|file):/.test(c.password)) {
        c.password = "<not a reference: withheld by the client>";
      }
    }
  }
  return {
    lab,
    secrets: l.secrets,
    ...(prune ? { prune } : {}),
    ...(ctx.flags.adopt === true ? { adopt: true } : {}),
  };
}

/** Prints every error with its JSON path on stderr and throws the exit code. */
function fail(file: string, errors: FieldError[], code: number, head?: string): never {
  note(`${file}: ${head ?? `${errors.length} error(s)`}`);
  for (const e of errors) note(`  ${e.field}: ${e.message}`);
  throw new CliError(`${file} is not valid`, code as typeof EXIT.usage);
}

/** POSTs the plan; a refusal with field errors is printed with the client's own errors. */
async function plan(ctx: Ctx, svc: Service, l: Loaded): Promise<LabPlan> {
  const res = await svc.fetch("/api/admin/dut/lab/plan", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request(ctx, l)),
  });
  const body = await res.json().catch(() => null);
  if (res.ok && !l.errors.length) return body as LabPlan;
  const server = (res.ok ? [] : (body?.errors ?? []) as FieldError[])
    .filter((e) => !l.errors.some((c) => c.field === e.field));
  const all = [...server, ...l.errors];
  if (!res.ok && !all.length) throw new CliError(problemLine(res.status, body), exitFor(res.status));
  // The service's own findings decide the code (2 schema, 1 rules); the client's alone are usage errors.
  fail(l.file, all, server.length ? exitFor(res.status) : EXIT.usage);
}

const show = (v: unknown) => typeof v === "string" ? v : v === null ? "null" : JSON.stringify(v);

/**
 * The plan as lines: the Plan summary first, then one line per device to create, update, remove or in
 * conflict (a screenful unless `verbose`), unchanged devices counted (listed with `verbose`); and the note
 * of devices not in the file, naming a screenful of them (issue 49: a lab of 5,000 printed 60 KB here).
 */
export function planLines(
  p: LabPlan,
  paint: (c: Colour, s: string) => string,
  verbose: boolean,
): { out: string[]; notes: string[] } {
  const line = (e: PlanEntry) => {
    const moved = e.movedFrom ? ` (moved from ${e.movedFrom})` : "";
    switch (e.action) {
      case "create":
        return paint("green", `+ create ${e.hostname}`);
      case "update": {
        const parts = e.changes.map((c) => `${c.field}: ${show(c.old)} → ${show(c.new)}`);
        if (e.credential === "changed") parts.push("credential: changed");
        return paint("yellow", `~ update ${e.hostname}${moved} (${parts.join("; ")})`);
      }
      case "remove":
        return paint("red", `- remove ${e.hostname} (${e.reason})`);
      case "conflict":
        return paint("red", `! conflict ${e.hostname}: ${e.reason}`);
      default:
        return `= unchanged ${e.hostname}${e.reason ? ` (${e.reason})` : ""}`;
    }
  };
  const s = p.summary;
  const n = (a: TestbedEntry["action"]) => p.testbeds.filter((t) => t.action === a).length;
  const unchanged = p.devices.filter((e) => e.action === "unchanged");
  const changed = p.devices.filter((e) => e.action !== "unchanged");
  const out = [
    `Plan: ${s.create} to create, ${s.update} to update, ${s.remove} to remove` +
    (s.conflict ? `, ${s.conflict} conflict(s)` : "") +
    (testbedChanges(p)
      ? `; testbeds: ${n("create")} to create, ${n("update")} to update, ${n("remove")} to remove` +
        (n("conflict") ? `, ${n("conflict")} conflict(s)` : "")
      : ""),
    ...bounded(changed.map(line), verbose, "change(s)"),
  ];
  if (verbose || unchanged.length <= SCREENFUL) out.push(...unchanged.map(line));
  else out.push(`= ${unchanged.length} unchanged (--verbose lists them)`);
  out.push(...bounded(p.testbeds.map((e) => testbedLine(paint, e)), verbose, "testbed line(s)"));
  const notes = p.notInFile.length
    ? [
      `note: ${p.notInFile.length} device(s) of lab ${p.lab} are not in the file and are left as they are ` +
      `(--prune disables them): ${boundedNames(p.notInFile, verbose)}`,
    ]
    : [];
  return { out, notes };
}

function printPlan(ctx: Ctx, p: LabPlan) {
  const { out: lines, notes } = planLines(p, ctx.paint, ctx.verbose);
  for (const l of lines) out(l);
  for (const n of notes) note(n);
}

/** One testbed line: `+ create testbed edge (hostnames: …)`, `~ update testbed …`, `- remove testbed …`. */
function testbedLine(paint: (c: Colour, s: string) => string, e: TestbedEntry): string {
  const parts = e.changes.map((c) =>
    e.action === "create" ? `${c.field}: ${show(c.new)}` : `${c.field}: ${show(c.old)} → ${show(c.new)}`
  );
  const detail = parts.length ? ` (${parts.join("; ")})` : "";
  switch (e.action) {
    case "create":
      return paint("green", `+ create testbed ${e.name}${detail}`);
    case "update":
      return paint("yellow", `~ update testbed ${e.name}${detail}`);
    case "remove":
      return paint("red", `- remove testbed ${e.name}`);
    case "conflict":
      return paint("red", `! conflict testbed ${e.name}: ${e.reason}`);
    default:
      return `= unchanged testbed ${e.name}`;
  }
}

const testbedChanges = (p: LabPlan) => p.testbeds.filter((t) => t.action !== "unchanged").length;
const changes = (p: LabPlan) =>
  p.summary.create + p.summary.update + p.summary.remove + p.summary.conflict + testbedChanges(p);

/** Asks on the terminal; never on a non-TTY. */
async function confirm(question: string): Promise<boolean> {
  Deno.stderr.writeSync(new TextEncoder().encode(`${question} Only "yes" is accepted: `));
  const buf = new Uint8Array(256);
  const n = await Deno.stdin.read(buf);
  return n !== null && new TextDecoder().decode(buf.subarray(0, n)).trim() === "yes";
}

const FILE_FLAG = {
  file: {
    type: "string" as const,
    short: "f",
    value: "FILE",
    description: "The lab file (YAML or JSON; - for stdin)",
  },
};
const PRUNE_FLAG = {
  prune: {
    type: "string" as const,
    value: "disable|delete",
    description:
      "Also remove the devices this lab manages that the file no longer lists (bare --prune: disable)",
  },
  adopt: {
    type: "boolean" as const,
    description: "Take over devices of listed hostnames that no lab manages",
  },
};
/** `--prune` alone means `--prune=disable` (node:util's parser wants a value). */
const barePrune = (argv: string[]) => argv.map((a) => a === "--prune" ? "--prune=disable" : a);

const SECRETS_HELP =
  "Passwords are references in the file (env:NAME, file:relative/path, the file refused\n" +
  "when group- or world-readable), resolved here and sent only to the plan and apply routes; no output shows one.";

export const labCommands: Command[] = [
  {
    path: ["lab", "validate"],
    summary: "Check a lab file: every error with its JSON path (schema, then the service's rules)",
    arity: [0, 0],
    flags: FILE_FLAG,
    more:
      `${SECRETS_HELP}\nChanges nothing. Exit 0 valid, 2 schema errors or unresolved secrets, 1 service rules.`,
    async run(ctx) {
      const l = await load(ctx);
      const p = await plan(ctx, ctx.svc(), l);
      if (ctx.json) {
        printJson({ valid: true, lab: p.lab, devices: p.devices.length, generation: p.generation });
      } else out(`${l.file}: valid (lab ${p.lab}, ${(l.lab.devices as unknown[]).length} device(s))`);
      return EXIT.ok;
    },
  },
  {
    path: ["lab", "diff"],
    summary: "Show what applying a lab file would change (a server-side dry run)",
    arity: [0, 0],
    preparse: barePrune,
    flags: {
      ...FILE_FLAG,
      ...PRUNE_FLAG,
      "exit-code": {
        type: "boolean",
        description: "Exit 1 when there are changes (as git diff --exit-code)",
      },
    },
    more:
      `${SECRETS_HELP}\n--json prints the plan (with the lab's generation and planHash); it holds no secret.`,
    async run(ctx) {
      const p = await plan(ctx, ctx.svc(), await load(ctx));
      if (ctx.json) printJson(p);
      else printPlan(ctx, p);
      return ctx.flags["exit-code"] === true && changes(p) > 0 ? EXIT.failed : EXIT.ok;
    },
  },
  {
    path: ["lab", "apply"],
    summary: "Apply a lab file in one transaction (asks first unless --yes)",
    arity: [0, 0],
    preparse: barePrune,
    flags: {
      ...FILE_FLAG,
      ...PRUNE_FLAG,
      yes: { type: "boolean", short: "y", description: "Apply without asking (required off a terminal)" },
      force: {
        type: "boolean",
        description: "Allow an empty devices list, or a prune of more than half of the lab",
      },
    },
    more:
      `${SECRETS_HELP}\nThe plan is shown, then applied all or nothing; a lab changed since the plan is refused\n` +
      "(HTTP 412, exit 1): run it again.",
    async run(ctx) {
      const svc = ctx.svc();
      const l = await load(ctx);
      const p = await plan(ctx, svc, l);
      if (!ctx.json) printPlan(ctx, p);
      if (changes(p) === 0) {
        if (ctx.json) printJson({ ok: true, changed: false, generation: p.generation, plan: p });
        else out(`No changes. Lab ${p.lab} is at generation ${p.generation}.`);
        return EXIT.ok;
      }
      if (ctx.flags.yes !== true) {
        if (!Deno.stdin.isTerminal()) {
          throw ctx.usage("Not applying without --yes: the input is not a terminal to ask on");
        }
        if (!await confirm(`Apply this plan to lab ${p.lab}?`)) {
          note("Not applied.");
          return EXIT.failed;
        }
      }
      const res = ok(
        await svc.api.POST("/api/admin/dut/lab/apply", {
          body: {
            ...request(ctx, l),
            expectedGeneration: p.generation,
            planHash: p.planHash,
            ...(ctx.flags.force === true ? { force: true } : {}),
          } as never,
        }),
      );
      if (ctx.json) printJson(res);
      else {
        const s = res.plan.summary;
        const tb = testbedChanges(res.plan);
        out(
          `Applied: ${s.create} created, ${s.update} updated, ${s.remove} removed` +
            (tb ? `; ${tb} testbed change(s)` : "") +
            `. Lab ${res.plan.lab} is at generation ${res.generation}.`,
        );
      }
      return EXIT.ok;
    },
  },
  {
    path: ["lab", "export"],
    summary: "Write the registry (or one lab) as a lab file, passwords as env: placeholders",
    arity: [0, 0],
    flags: {
      name: {
        type: "string",
        value: "NAME",
        description: "Only the devices lab NAME manages (its metadata.name)",
      },
      out: {
        type: "string",
        short: "o",
        value: "FILE",
        description: "Write the file here (default: stdout)",
      },
    },
    more:
      "Each device gets its own credential whose password is env:DUTLAB_PASSWORD_<HOSTNAME> (the names\n" +
      "are listed on stderr): set them, then `dutlab lab diff` is clean. Without --name every device is written\n" +
      "under metadata.name lab (edit it; apply --adopt takes over devices no lab manages). Testbeds are written\n" +
      "too (with --name, the lab's own), a device id of a testbed made through the API as its hostname.",
    async run(ctx) {
      const svc = ctx.svc();
      const name = str(ctx.flags.name);
      const all = ok(await svc.api.GET("/api/admin/dut/devices", {})).devices as Device[];
      const devices = name !== undefined ? all.filter((d) => d.managedBy === name) : all;
      let testbeds = ok(await svc.api.GET("/api/admin/testbeds", {})).testbeds as Testbed[];
      if (name !== undefined) testbeds = testbeds.filter((t) => t.managedBy === name);
      const doc = exportLab(name ?? "lab", devices, testbeds, all);
      const text = toYaml(doc, { lineWidth: 0 });
      const file = str(ctx.flags.out);
      if (file) await writeOut(file, text);
      else out(text);
      const vars = Object.values(doc.credentials).map((c) => c.password.slice(4));
      if (vars.length) note(`Set before diff or apply: ${boundedNames(vars, ctx.verbose)}`);
      return EXIT.ok;
    },
  },
];

/** The suggested environment variable of a device's password. */
export const passwordVar = (hostname: string) =>
  `DUTLAB_PASSWORD_${hostname.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;

/**
 * Devices and testbeds as a lab file: one credential per device, fields at their built-in default left out; a
 * testbed's device ids (made through the API) written as hostnames (`all`: the devices to look them up in).
 */
export function exportLab(
  name: string,
  devices: Device[],
  testbeds: Testbed[] = [],
  all: Device[] = devices,
) {
  const credentials: Record<string, { username: string; password: string }> = {};
  const list = devices.map((d) => {
    const cred = d.hostname.slice(0, 64).replace(/^[^A-Za-z0-9]/, "x");
    credentials[cred] = { username: d.username, password: `env:${passwordVar(d.hostname)}` };
    return {
      hostname: d.hostname,
      vendor: d.vendor,
      ...(d.deviceRole ? { deviceRole: d.deviceRole } : {}),
      baseUrl: d.baseUrl,
      ...(d.tlsVerifyMode !== "strict" ? { tlsVerifyMode: d.tlsVerifyMode } : {}),
      ...(d.pollIntervalSeconds !== 300 ? { pollIntervalSeconds: d.pollIntervalSeconds } : {}),
      ...(d.notes !== null ? { notes: d.notes } : {}),
      ...(d.tags.length ? { tags: d.tags } : {}),
      ...(d.enabled ? {} : { enabled: false }),
      credential: cred,
    };
  });
  const hostOf = new Map(all.map((d) => [d.id, d.hostname]));
  const beds = Object.fromEntries(testbeds.map((t) => {
    const hostnames = [
      ...(t.selector.hostnames ?? []),
      ...(t.selector.deviceIds ?? []).flatMap((id) => hostOf.has(id) ? [hostOf.get(id)!] : []),
    ];
    return [t.name, {
      ...(t.description !== null ? { description: t.description } : {}),
      ...(hostnames.length ? { hostnames } : {}),
      ...(t.selector.tags?.length ? { tags: t.selector.tags } : {}),
      ...(t.selector.roles?.length ? { roles: t.selector.roles } : {}),
    }];
  }));
  return {
    apiVersion: "dutlab/v1",
    kind: "Lab",
    metadata: { name },
    credentials,
    devices: list,
    ...(testbeds.length ? { testbeds: beds } : {}),
  };
}
