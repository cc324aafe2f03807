/**
 * Boundary check (`deno task boundaries`): an adapter, check or plugin may import `@dutlab/core`, its own
 * files and npm/node dependencies — never another adapter, check or plugin, nor an entry point.
 * Only tests and simulators may import `@dutlab/core/testing`. Core must import no module member.
 *
 * Inside core, two walls between rooms (matched by folder name, so they hold wherever a regrouping of
 * core/src puts the rooms):
 * - Domain code does not import the HTTP layer: a file under core/ outside an `http/` folder of core/src
 *   may not import a module under one. The HTTP layer maps domain errors to problem+json, never the
 *   reverse. Exempt is the runtime wiring that builds the app: `bootstrap.ts` (re-exports `createApp` for
 *   the entry points) and `core/testing/app.ts` (builds the app for tests).
 * - The poller does not import runs: a file under a `poller/` folder of core/src may not import a module
 *   under a `runs/` folder (the runs feature registers its write hook with the poll store instead).
 *
 * The command-line client (`cli/`) talks to the service over the HTTP API only: it imports no
 * `@dutlab/*` member and no file of `core/`, `adapters/`, `checks/` or `plugins/` (its types come from the
 * generated API client; `tools/verify_report.ts`, the self-contained verifier, is allowed).
 *
 * Exits 1 listing every violation.
 */
const root = Deno.env.get("BOUNDARY_ROOT")?.replace(/\/?$/, "/") ?? new URL("../", import.meta.url).pathname;
const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm;

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory && !e.name.startsWith(".")) yield* tsFiles(p);
    else if (e.isFile && /\.(ts|tsx)$/.test(e.name)) yield p;
  }
}

function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT_RE)) {
    // Each alternative of IMPORT_RE captures the specifier in its own group; exactly one matched.
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec !== undefined) out.push(spec);
  }
  return out;
}

const violations: string[] = [];
const rel = (p: string) => p.slice(root.length);
const isTestOrSim = (f: string) => /(_test\.tsx?|\/sim\.ts|\/_testing\.ts|\/testing\/.*)$/.test(f);

for (const kind of ["adapters", "checks", "plugins"]) {
  for await (const member of Deno.readDir(`${root}${kind}`)) {
    if (!member.isDirectory) continue;
    const dir = `${root}${kind}/${member.name}`;
    for await (const file of tsFiles(dir)) {
      for (const spec of specifiers(await Deno.readTextFile(file))) {
        const where = `${rel(file)} imports "${spec}"`;
        if (spec.startsWith(".")) {
          const target = new URL(spec, `file://${file}`).pathname;
          if (!target.startsWith(dir + "/")) violations.push(`${where}: reaches outside its member folder`);
        } else if (spec === "@dutlab/core" || spec.startsWith("@dutlab/core/")) {
          if (spec.startsWith("@dutlab/core/testing") && !isTestOrSim(file)) {
            violations.push(`${where}: only tests and simulators may import @dutlab/core/testing`);
          } else if (spec === "@dutlab/core/runtime") {
            violations.push(`${where}: modules may not import the runtime wiring`);
          }
        } else if (spec.startsWith("@dutlab/")) {
          // A test may load another member to read its payloads through the real facts.
          if (!(/_test\.tsx?$/.test(file) && kind === "checks" && spec.startsWith("@dutlab/adapter-"))) {
            violations.push(`${where}: a module may not import another module`);
          }
        } else if (spec.startsWith("file:") || spec.startsWith("http")) {
          violations.push(`${where}: use the import map, not a URL`);
        }
      }
    }
  }
}

for await (const file of tsFiles(`${root}core`)) {
  for (const spec of specifiers(await Deno.readTextFile(file))) {
    if (
      /^@dutlab\/(adapter|check|plugin)-/.test(spec) ||
      /modules\.gen\.ts$|(^|\/)(server|poller)\.ts$/.test(spec)
    ) {
      violations.push(`${rel(file)} imports "${spec}": core knows no module and no entry point`);
    }
  }
}

/** The folders of core/src a path lies in (e.g. ["runs"] for core/src/runs/service.ts), or null outside. */
function srcFolders(path: string): string[] | null {
  const src = `${root}core/src/`;
  if (!path.startsWith(src)) return null;
  return path.slice(src.length).split("/").slice(0, -1);
}
/** The runtime wiring that builds the HTTP app, allowed to import it (see the header). */
const isAppWiring = (file: string) =>
  (srcFolders(file) !== null && /(^|\/)bootstrap\.ts$/.test(file)) || file === `${root}core/testing/app.ts`;

for await (const file of tsFiles(`${root}core`)) {
  const from = srcFolders(file);
  for (const spec of specifiers(await Deno.readTextFile(file))) {
    if (!spec.startsWith(".")) continue;
    const to = srcFolders(new URL(spec, `file://${file}`).pathname);
    if (!to) continue;
    const where = `${rel(file)} imports "${spec}"`;
    if (to.includes("http") && !from?.includes("http") && !isAppWiring(file)) {
      violations.push(`${where}: domain code may not import the HTTP layer (throw a domain error instead)`);
    }
    if (from?.includes("poller") && to.includes("runs")) {
      violations.push(`${where}: the poller may not import runs (register a poll store write hook instead)`);
    }
  }
}

// The CLI: HTTP API only (see the header). No cli/ folder (a temp tree of the tests): nothing to check.
const cliDir = `${root}cli`;
if (await Deno.stat(cliDir).then((s) => s.isDirectory, () => false)) {
  for await (const file of tsFiles(cliDir)) {
    for (const spec of specifiers(await Deno.readTextFile(file))) {
      const target = spec.startsWith(".") ? new URL(spec, `file://${file}`).pathname : null;
      const inside = target !== null && /^(core|adapters|checks|plugins)\//.test(target.slice(root.length));
      // `@dutlab/cli` itself is what its JSDoc examples import.
      if ((spec.startsWith("@dutlab/") && spec !== "@dutlab/cli") || inside) {
        violations.push(
          `${rel(file)} imports "${spec}": the CLI talks to the service over the HTTP API only`,
        );
      }
    }
  }
}

if (violations.length) {
  console.error(`Boundary violations (${violations.length}):\n  ${violations.join("\n  ")}`);
  Deno.exit(1);
}
console.log(
  "boundaries: ok (adapters, checks and plugins import only @dutlab/core and their own dependencies; " +
    "core domain code imports no http/, the poller no runs/, the CLI no member)",
);
