/**
 * Issue 21 point 5: /metrics is prom-client output with process metrics, HTTP metrics by route template and
 * status, the poller's metrics, and label values escaped (not mangled); `promtool check metrics` accepts it
 * (Debian package `prometheus`; the test is ignored, saying so, where promtool is not installed).
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";

const promtool = (() => {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/promtool`).isFile) return `${dir}/promtool`;
    } catch { /* not here */ }
  }
  return null;
})();

dbTest(
  "metrics: process, HTTP by route template and status, poller, refused tokens, escaped labels",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const id = crypto.randomUUID();
    await app.request(`/api/admin/dut/devices/${id}`, { headers: auth });
    await app.request(`/api/admin/dut/devices/${crypto.randomUUID()}`, { headers: auth });
    await app.request("/api/admin/dut/devices", { headers: auth });
    await app.request("/api/admin/dut/devices", jsonReq("POST", {}, { authorization: "Bearer nope" }));
    await app.request("/nowhere");
    svc.metrics.polls.inc({ vendor: 'odd "vendor"\\name\nx', status: "ok" });
    const res = await app.request("/metrics");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    for (
      const re of [
        /^process_cpu_seconds_total \d/m,
        /^process_resident_memory_bytes \d/m,
        /^process_start_time_seconds \d/m,
        /^dutlab_http_requests_total\{method="GET",route="\/api\/admin\/dut\/devices\/:id",status="404"\} 2$/m,
        /^dutlab_http_requests_total\{method="GET",route="\/api\/admin\/dut\/devices",status="200"\} 1$/m,
        /^dutlab_http_requests_total\{method="POST",route="\/api\/admin\/dut\/devices",status="401"\} 1$/m,
        /^dutlab_http_requests_total\{method="GET",route="unmatched",status="404"\} 1$/m,
        /^dutlab_http_request_duration_seconds_bucket\{le="0\.001",method="GET",route="\/api\/admin\/dut\/devices",status="200"\} \d/m,
        /^dutlab_auth_refused_total\{reason="invalid"\} 1$/m,
        /^dutlab_poll_lock_held 0$/m,
        /^dutlab_poll_overruns_total 0$/m,
        /^# TYPE dutlab_poll_duration_seconds histogram$/m,
        /^dutlab_polls_total\{vendor="odd \\"vendor\\"\\\\name\\nx",status="ok"\} 1$/m,
      ]
    ) assert.match(text, re);
    assert.ok(!text.includes(id), "no raw path (ids) as a label");
    assert.ok(!/eventloop_lag/.test(text));
  },
);

if (!promtool) {
  console.warn("promtool is not on PATH (Debian package `prometheus`): the promtool check is ignored");
}

dbTest("promtool check metrics accepts /metrics", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await app.request("/api/admin/dut/devices", { headers: auth });
  const text = await (await app.request("/metrics")).text();
  const child = new Deno.Command(promtool!, {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  })
    .spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(text));
  await w.close();
  const out = await child.output();
  const msg = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, msg);
  assert.equal(msg.trim(), "", `promtool reports problems:\n${msg}`);
}, { ignore: promtool === null });
