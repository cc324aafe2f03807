/**
 * Issue 33 point 2, judged from outside: Prism (Stoplight's validating proxy, pinned) in front of the service
 * finds no response the document does not declare when each refused role calls each operation it is refused.
 * The same requests through a copy of the document without its 403s must make Prism report "Unable to match
 * the returned status code", so this test can fail.
 */
import assert from "node:assert/strict";
import { dbTest } from "@dutlab/core/testing";
import { freePort } from "../../core/harness/serve.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { fixtureModules } from "@dutlab/core/testing";
import { refusedRoles, ROLES } from "../../core/harness/core.ts";

/** The pinned Prism CLI. */
export const PRISM = "@stoplight/prism-cli@5.14.2";

/** Prism proxying `upstream` with the document at `file`, in its own process group; its output collected. */
async function prism(dir: string, file: string, upstream: string) {
  const port = freePort();
  const child = new Deno.Command("setsid", {
    args: ["npx", "-y", PRISM, "proxy", file, upstream, "--port", String(port), "--host", "127.0.0.1"],
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const dec = new TextDecoder();
  const reading = Promise.all([child.stdout, child.stderr].map(async (s) => {
    for await (const chunk of s) out += dec.decode(chunk, { stream: true });
  }));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    const up = await fetch(`${url}/healthz`).then((r) => r.body?.cancel().then(() => true), () => false);
    if (up) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    output: () => out,
    async stop() {
      try {
        Deno.kill(-child.pid, "SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await reading;
    },
  };
}

dbTest("Prism finds every 403 a role gets declared in the document", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const dir = await Deno.makeTempDir({ prefix: "dutlab-prism-" });
  try {
    const doc = await (await fetch(`${origin}/api/openapi.json`)).json() as {
      paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
    };
    const stripped = structuredClone(doc);
    for (const item of Object.values(stripped.paths)) {
      for (const op of Object.values(item)) delete op.responses["403"];
    }
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(doc));
    await Deno.writeTextFile(`${dir}/no403.json`, JSON.stringify(stripped));
    const tokens: Record<string, string> = {};
    for (const role of ROLES) {
      const r = await app.request("/api/admin/tokens", jsonReq("POST", { name: `p-${role}`, role }, auth));
      tokens[role] = (await r.json()).token;
    }
    // Each refused (operation, role): the request Prism forwards, the answer it must find in the document.
    const calls: Array<{ method: string; path: string; role: string }> = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (op.security?.length === 0) continue;
        const url = path.replace(/\{[^}]+\}/g, () => crypto.randomUUID());
        for (const role of refusedRoles(method, path.replace(/\{([^}]+)\}/g, ":$1"))) {
          calls.push({ method: method.toUpperCase(), path: url, role });
        }
      }
    }
    assert.ok(calls.length >= 15, `${calls.length} refused calls`);

    for (const [file, expectViolations] of [["openapi.json", false], ["no403.json", true]] as const) {
      const p = await prism(dir, file, origin);
      try {
        for (const c of calls) {
          const res = await fetch(`${p.url}${c.path}`, {
            method: c.method,
            headers: { authorization: `Bearer ${tokens[c.role]}`, "content-type": "application/json" },
            body: c.method === "GET" || c.method === "DELETE" ? undefined : "{}",
          });
          const body = await res.text();
          assert.equal(res.status, 403, `${c.role} ${c.method} ${c.path} through Prism (${file}): ${body}`);
        }
        await new Promise((r) => setTimeout(r, 500)); // Prism logs after answering
        const unmatched = p.output().split("\n").filter((l) => /Violation: response/.test(l));
        if (expectViolations) {
          assert.ok(
            unmatched.filter((l) => /Unable to match the returned status code/.test(l)).length >=
              calls.length,
            `Prism must flag the undeclared 403s of ${file}:\n${p.output()}`,
          );
        } else {
          assert.deepEqual(unmatched, [], `Prism's response violations with the served document`);
        }
      } finally {
        await p.stop();
      }
    }
  } finally {
    await server.shutdown();
    await svc.events.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}, { only: ["pglite"] });
