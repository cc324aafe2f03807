import type { AdapterDefinition } from "./adapter.ts";
import type { CheckDefinition } from "./check.ts";
import { type Plan, type PlanCatalog, PlanDependsOnSchema, type PluginDefinition } from "./plan.ts";
import { StartupError } from "./errors.ts";
import { serves } from "./capability.ts";
import { CORE_VERSION, coreSatisfies } from "./version.ts";

/** A module as the generated `modules.gen.ts` hands it over: its package identity and default export. */
export interface LoadedModule<T = unknown> {
  /** Package name from the member's deno.json, e.g. `@dutlab/adapter-vendor-a-ngfw`. */
  name: string;
  /** Package version from the member's deno.json. */
  version: string;
  /**
   * The `@dutlab/core` range the module declares (its `coreVersion`), recorded by `deno task gen` so that the
   * generated file shows each member's range and a member whose range no longer admits this core is caught
   * by `deno task gen:check`. Absent for modules assembled by hand (tests): the module's own declaration
   * is then the only one.
   */
  coreVersion?: string;
  /** The member's module (its default export). */
  module: T;
}

/** What the manifest enables. */
export interface LoadedModules {
  /** The enabled adapter members. */
  adapters: LoadedModule[];
  /** The enabled check members. */
  checks: LoadedModule[];
  /** The enabled plugin members. */
  plugins: LoadedModule[];
  /** Vendors listed without an adapter (`available: false`). */
  vendorsWithoutAdapter: Array<{ key: string; displayName: string }>;
}

/** Vendor entry (spec 2.1) plus the adapter module's version. */
export interface VendorEntry {
  /** Vendor key. */
  key: string;
  /** Vendor name for people. */
  displayName: string;
  /** Whether an adapter is enabled for the vendor. */
  available: boolean;
  /** Version of the adapter module, null when none is implemented. */
  version: string | null;
}

/** An enabled adapter with the name and version of its member. */
export interface RegisteredAdapter {
  /** Member package name (`@dutlab/adapter-<key>`). */
  name: string;
  /** Member version. */
  version: string;
  /** The adapter. */
  adapter: AdapterDefinition;
}

/** An enabled check with the name and version of its member. */
export interface RegisteredCheck {
  /** Member package name (`@dutlab/check-<id>`). */
  name: string;
  /** Member version. */
  version: string;
  /** The check. */
  check: CheckDefinition;
}

/** The validated set of modules a process runs with. */
export interface Registry {
  /** Every vendor (spec 2.1), with or without an adapter. */
  vendors: VendorEntry[];
  /** Adapters by vendor key. */
  adapters: Map<string, RegisteredAdapter>;
  /** Enabled checks, in manifest order. */
  checks: RegisteredCheck[];
  /** Enabled plugins with their member name and version. */
  plugins: Array<{ name: string; version: string; plugin: PluginDefinition }>;
  /** The test-plan catalog a plugin provides (an empty one when none does). */
  planCatalog: PlanCatalog;
  /** The catalog's plan with this identifier, or undefined. */
  plan(identifier: string): Plan | undefined;
  /** Device roles accepted at registration: every enabled adapter's `deviceRoles`, first seen first. */
  deviceRoles: string[];
  /** Ids of enabled checks that no enabled adapter serves (collects the label and offers the facts). */
  unservedChecks: string[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

function shapeError(m: LoadedModule, what: string): never {
  throw new StartupError("MODULE_SHAPE", `Module ${m.name}@${m.version} is not a valid ${what}`);
}

type ModuleKind = "adapter" | "check" | "plugin";
const HELPER: Record<ModuleKind, string> = {
  adapter: "defineAdapter",
  check: "defineCheck",
  plugin: "definePlugin",
};

/**
 * Refuse a default export that is not of the kind the manifest lists it under. `kind` is set by the
 * `define*` helpers, so a module listed under the wrong key (an adapter under `checks`) is named as such
 * instead of failing on whichever field its shape happens to lack.
 */
function checkKind(m: LoadedModule, expected: ModuleKind): Record<string, unknown> {
  const mod = m.module;
  const article = (k: string) => (k === "adapter" ? "an" : "a");
  if (!isObj(mod)) shapeError(m, `${expected} (default export of ${HELPER[expected]})`);
  const kind = mod.kind;
  if (kind !== expected && typeof kind === "string" && Object.hasOwn(HELPER, kind)) {
    throw new StartupError(
      "MODULE_KIND",
      `Module ${m.name}@${m.version} is listed under "${expected}s" in modules.json, but its default export ` +
        `is ${article(kind)} ${kind} (made with ${HELPER[kind as ModuleKind]}); list it under "${kind}s"`,
    );
  }
  if (kind !== expected) {
    shapeError(m, `${expected} (default export of ${HELPER[expected]}, which sets "kind")`);
  }
  return mod;
}

function checkCore(m: LoadedModule, declared: unknown) {
  if (m.coreVersion !== undefined && m.coreVersion !== declared) {
    throw new StartupError(
      "MODULE_CORE_VERSION",
      `Module ${m.name}@${m.version} declares @dutlab/core ${JSON.stringify(declared)}, but modules.gen.ts ` +
        `records ${JSON.stringify(m.coreVersion)}: run \`deno task gen\``,
    );
  }
  const range = m.coreVersion ?? declared;
  if (typeof range !== "string" || !coreSatisfies(range)) {
    throw new StartupError(
      "MODULE_CORE_VERSION",
      `Module ${m.name}@${m.version} is written for @dutlab/core ${JSON.stringify(range)}, ` +
        `but this is @dutlab/core ${CORE_VERSION}`,
    );
  }
}

function validateAdapter(m: LoadedModule): AdapterDefinition {
  const a = checkKind(m, "adapter");
  const bad = (field: string) => shapeError(m, `adapter: "${field}" is missing or of the wrong type`);
  if (typeof a.vendorKey !== "string" || !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(a.vendorKey)) bad("vendorKey");
  if (typeof a.displayName !== "string" || !a.displayName) bad("displayName");
  if (!Array.isArray(a.labels) || a.labels.length === 0 || a.labels.some((l) => typeof l !== "string")) {
    bad("labels");
  }
  if (
    !Array.isArray(a.deviceRoles) || a.deviceRoles.length === 0 ||
    a.deviceRoles.some((r) => typeof r !== "string" || !r)
  ) bad("deviceRoles");
  if (typeof a.create !== "function") bad("create");
  if (a.facts !== undefined && !isObj(a.facts)) bad("facts");
  const facts = (a.facts ?? {}) as Record<string, unknown>;
  if (facts.inventory !== undefined && typeof facts.inventory !== "function") bad("facts.inventory");
  if (a.inventoryLabel !== undefined && typeof a.inventoryLabel !== "string") bad("inventoryLabel");
  if (a.baseUrlPath !== undefined && typeof a.baseUrlPath !== "boolean") bad("baseUrlPath");
  if (facts.inventory !== undefined && !(a.labels as unknown[]).includes(a.inventoryLabel)) {
    shapeError(
      m,
      `adapter: "inventoryLabel" ${JSON.stringify(a.inventoryLabel ?? null)} is not one of its labels ` +
        `(required when facts.inventory is given)`,
    );
  }
  if (a.volatilePaths !== undefined) {
    if (!isObj(a.volatilePaths) || Array.isArray(a.volatilePaths)) bad("volatilePaths");
    for (const [label, patterns] of Object.entries(a.volatilePaths as Record<string, unknown>)) {
      if (!(a.labels as unknown[]).includes(label)) {
        shapeError(
          m,
          `adapter: "volatilePaths" names ${JSON.stringify(label)}, which is not one of its labels`,
        );
      }
      if (!Array.isArray(patterns)) bad(`volatilePaths.${label}`);
      for (const p of patterns as unknown[]) {
        const why = volatilePatternError(p);
        if (why) shapeError(m, `adapter: "volatilePaths.${label}" pattern ${JSON.stringify(p)} ${why}`);
      }
    }
  }
  checkCore(m, a.coreVersion);
  return a as unknown as AdapterDefinition;
}

function validateCheck(m: LoadedModule): CheckDefinition {
  const c = checkKind(m, "check");
  const bad = (field: string) => shapeError(m, `check: "${field}" is missing or of the wrong type`);
  if (typeof c.id !== "string" || !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(c.id)) bad("id");
  if (typeof c.description !== "string" || !c.description) bad("description");
  if (typeof c.label !== "string" || !c.label) bad("label");
  if (c.appliesTo !== undefined && typeof c.appliesTo !== "function") bad("appliesTo");
  if (
    c.needs !== undefined &&
    (!Array.isArray(c.needs) || c.needs.some((f) => typeof f !== "string" || !f))
  ) bad("needs");
  if (c.optIn !== undefined && typeof c.optIn !== "boolean") bad("optIn");
  if (
    c.alsoReads !== undefined &&
    (!Array.isArray(c.alsoReads) || c.alsoReads.some((l) => typeof l !== "string" || !l))
  ) bad("alsoReads");
  if (typeof c.evaluate !== "function") bad("evaluate");
  checkCore(m, c.coreVersion);
  return c as unknown as CheckDefinition;
}

function validatePlugin(m: LoadedModule): PluginDefinition {
  const p = checkKind(m, "plugin");
  if (typeof p.name !== "string") shapeError(m, `plugin: "name" is missing or of the wrong type`);
  checkCore(m, p.coreVersion);
  if (p.planCatalog !== undefined) {
    const pc = p.planCatalog as Record<string, unknown>;
    if (!isObj(pc) || !Number.isInteger(pc.catalogVersion) || !Array.isArray(pc.plans)) {
      shapeError(m, "plugin: planCatalog needs an integer catalogVersion and a plans array");
    }
  }
  return p as unknown as PluginDefinition;
}

/**
 * Validate the modules the manifest enables and build the registry. Fails fast with a coded
 * StartupError: MODULE_SHAPE, MODULE_KIND, MODULE_CORE_VERSION, DUPLICATE_VENDOR, DUPLICATE_CHECK, DUPLICATE_PLAN,
 * PLAN_CATALOG.
 */
export function buildRegistry(mods: LoadedModules): Registry {
  const adapters = new Map<string, RegisteredAdapter>();
  const vendors: VendorEntry[] = [];
  for (const m of mods.adapters) {
    const a = validateAdapter(m);
    const prior = adapters.get(a.vendorKey);
    if (prior) {
      throw new StartupError(
        "DUPLICATE_VENDOR",
        `Vendor key "${a.vendorKey}" is provided by both ${prior.name} and ${m.name}`,
      );
    }
    adapters.set(a.vendorKey, { name: m.name, version: m.version, adapter: a });
    vendors.push({ key: a.vendorKey, displayName: a.displayName, available: true, version: m.version });
  }
  for (const v of mods.vendorsWithoutAdapter) {
    if (vendors.some((x) => x.key === v.key)) {
      throw new StartupError("DUPLICATE_VENDOR", `Vendor key "${v.key}" is listed twice in the manifest`);
    }
    vendors.push({ key: v.key, displayName: v.displayName, available: false, version: null });
  }
  const checks: RegisteredCheck[] = [];
  for (const m of mods.checks) {
    const c = validateCheck(m);
    const prior = checks.find((x) => x.check.id === c.id);
    if (prior) {
      throw new StartupError(
        "DUPLICATE_CHECK",
        `Check id "${c.id}" is provided by both ${prior.name} and ${m.name}`,
      );
    }
    checks.push({ name: m.name, version: m.version, check: c });
  }
  const plugins = mods.plugins.map((m) => ({ name: m.name, version: m.version, plugin: validatePlugin(m) }));
  const catalogs = plugins.filter((p) => p.plugin.planCatalog);
  if (catalogs.length > 1) {
    throw new StartupError(
      "PLAN_CATALOG",
      `More than one plan catalog enabled: ${catalogs.map((c) => c.name).join(", ")}`,
    );
  }
  const planCatalog: PlanCatalog = catalogs[0]?.plugin.planCatalog ?? { catalogVersion: 0, plans: [] };
  const ids = new Set<string>();
  for (const p of planCatalog.plans) {
    if (ids.has(p.identifier)) {
      throw new StartupError("DUPLICATE_PLAN", `Plan "${p.identifier}" is defined twice`);
    }
    ids.add(p.identifier);
    // A misspelt gate must stop the start-up: read as "no gate" it would let every start through.
    if (p.startGate !== undefined && p.startGate !== "preflight-pass") {
      throw new StartupError(
        "PLAN_CATALOG",
        `Plan "${p.identifier}": startGate must be "preflight-pass" or absent, not ${
          JSON.stringify(p.startGate)
        }`,
      );
    }
    if (p.dependsOn !== undefined) {
      const r = PlanDependsOnSchema.safeParse(p.dependsOn);
      if (!r.success) {
        const issue = r.error.issues[0]!; // a failed parse has at least one issue
        throw new StartupError(
          "PLAN_CATALOG",
          `Plan "${p.identifier}": dependsOn${
            issue.path.map((k) => typeof k === "number" ? `[${k}]` : `.${String(k)}`).join("")
          }: ${issue.message}`,
        );
      }
    }
  }
  const deviceRoles = [...new Set([...adapters.values()].flatMap((a) => [...a.adapter.deviceRoles]))];
  const unservedChecks = checks.filter((c) => ![...adapters.values()].some((a) => serves(a.adapter, c.check)))
    .map((c) => c.check.id);
  return {
    vendors,
    adapters,
    checks,
    plugins,
    planCatalog,
    plan: (identifier) => planCatalog.plans.find((p) => p.identifier === identifier),
    deviceRoles,
    unservedChecks,
  };
}

/** Why `pattern` is not a volatile-path pattern, or null when it is one. */
export function volatilePatternError(pattern: unknown): string | null {
  if (typeof pattern !== "string") return "is not a string";
  if (pattern === "") return "is empty (it would hide the whole payload)";
  if (!pattern.startsWith("/")) return "must start with / (a JSON Pointer)";
  if (/~[^01]|~$/.test(pattern)) return "has a ~ that is not ~0 or ~1";
  return null;
}
