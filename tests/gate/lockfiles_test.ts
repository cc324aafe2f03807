/**
 * The serve path does not download what only tests use (issue 33 point 6).
 *
 * `deno task` installs every npm package of the lockfile before it runs a task (Deno 2.9's task runner calls
 * `cache_packages(PackageCaching::All)` whenever npm is managed, whatever `--unstable-npm-lazy-caching` says),
 * so the packages only tests and benchmarks import are kept out of the lockfile `deno task serve` reads:
 * `deno.lock` holds what the product imports (service, poller, CLI, tools, lab) and `deno.dev.lock` holds that
 * plus the test-only packages, which tests and benchmarks import with pinned inline `npm:` specifiers (not
 * through deno.json's imports). The `test`, `checks` and `bench` tasks run with `--lock=deno.dev.lock`;
 * `deno task checks` fails when either lockfile is out of date (`--frozen`).
 */
import assert from "node:assert/strict";
import { childEnv } from "../../core/harness/process.ts";

const ROOT = new URL("../..", import.meta.url);
/** npm packages only tests and benchmarks import, with the packages they alone bring. */
const TEST_ONLY = [
  "fast-check",
  "pure-rand",
  "marked",
  "github-slugger",
  "csv-parse",
  "@seriousme/openapi-schema-validator",
  "ajv",
  "ajv-formats",
  "ajv-draft-04",
  "postgres",
  "typescript",
];

interface Lock {
  specifiers: Record<string, string>;
  npm: Record<string, { integrity: string }>;
  workspace: unknown;
}
const readLock = async (name: string): Promise<Lock> =>
  JSON.parse(await Deno.readTextFile(new URL(name, ROOT)));
/** `ajv-formats@3.0.1_ajv@8.20.0` → `ajv-formats`. */
const nameOf = (key: string) => key.slice(0, key.indexOf("@", 1));

Deno.test("deno.lock holds no test-only package; deno.dev.lock holds them and agrees with deno.lock", async () => {
  const prod = await readLock("deno.lock");
  const dev = await readLock("deno.dev.lock");
  const prodNames = new Set(Object.keys(prod.npm).map(nameOf));
  const devNames = new Set(Object.keys(dev.npm).map(nameOf));
  for (const name of TEST_ONLY) {
    assert.ok(!prodNames.has(name), `${name} is in deno.lock`);
    assert.ok(devNames.has(name), `${name} is missing from deno.dev.lock`);
  }
  // The same package resolves to the same bytes in both.
  for (const [key, entry] of Object.entries(prod.npm)) {
    assert.deepEqual(dev.npm[key], entry, `${key}: deno.dev.lock differs from deno.lock`);
  }
  assert.deepEqual(dev.workspace, prod.workspace, "both lockfiles record the same deno.json imports");
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const imported = Object.values(config.imports as Record<string, string>).join(" ");
  for (const name of TEST_ONLY) {
    assert.ok(!imported.includes(`npm:${name}@`), `deno.json imports ${name}: import it inline in its test`);
  }
  for (const task of ["test", "bench"]) {
    assert.match(config.tasks[task], /--lock=deno\.dev\.lock\b/, `task ${task} reads deno.dev.lock`);
  }
});

Deno.test({
  name: "`deno task serve` on an empty DENO_DIR downloads only packages of deno.lock, none only tests use",
  async fn() {
    const denoDir = await Deno.makeTempDir({ prefix: "dutlab-denodir-" });
    const dataDir = await Deno.makeTempDir({ prefix: "dutlab-data-" });
    const lockBefore = await Deno.readTextFile(new URL("deno.lock", ROOT));
    try {
      // The task as the README starts it; an invalid PORT stops server.ts at its configuration check, after
      // `deno task` installed the lockfile's packages and `deno run` loaded the service's whole module graph.
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["task", "serve"],
        cwd: ROOT,
        clearEnv: true,
        env: childEnv({ DENO_DIR: denoDir, NO_COLOR: "1", PORT: "not-a-port", DUT_DATA_DIR: dataDir }),
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(300_000),
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.notEqual(out.code, 0, text);
      assert.match(text, /PORT/, `server.ts ran and refused the port:\n${text}`);
      const tarballs = [...text.matchAll(/^Download https:\/\/\S+\/-\/(\S+)\.tgz$/gm)].map((m) => m[1]!);
      assert.ok(tarballs.length > 50, `downloaded ${tarballs.length} packages:\n${text}`);
      const prod = await readLock("deno.lock");
      const prodKeys = new Set(Object.keys(prod.npm).map((k) => k.split("_")[0]!));
      for (const file of tarballs) {
        // `zod-openapi-1.6.3` of @hono/zod-openapi: match on the lockfile's `<name>@<version>` keys.
        const found = [...prodKeys].some((k) =>
          `${nameOf(k).split("/").pop()}-${k.slice(nameOf(k).length + 1)}` === file
        );
        assert.ok(found, `${file}.tgz is not a package of deno.lock`);
      }
      const fetched = tarballs.join(" ");
      for (const name of TEST_ONLY) {
        const base = name.split("/").pop()!;
        assert.doesNotMatch(fetched, new RegExp(`(^| )${base}-\\d`), `${name} was downloaded`);
      }
      assert.equal(
        await Deno.readTextFile(new URL("deno.lock", ROOT)),
        lockBefore,
        "the serve path leaves deno.lock as committed",
      );
    } finally {
      await Deno.remove(denoDir, { recursive: true }).catch(() => {});
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
