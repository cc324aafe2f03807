import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, TEST_ADMIN_TOKEN, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { shareLink } from "./share.ts";
import { type App, type Auth, finishRun, startRun } from "../../harness/runs_lab.ts";

const PLAN = "fixture-plan";

async function finishedRun(app: App, auth: Auth): Promise<string> {
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [3, 4, 5] },
  });
  return run.executionId;
}

/** Path and query of a URL, for `app.request`. */
const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

dbTest("a share link opens the print page without a token until it expires", async (db) => {
  const { app, auth, config } = await testServices(db, fixtureModules());
  const id = await finishedRun(app, auth);
  const res = await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth));
  assert.equal(res.status, 200);
  const { url, expiresAt } = await res.json();
  const u = new URL(url);
  assert.equal(u.origin, "http://localhost", "the request's origin when DUT_PUBLIC_URL is unset");
  assert.equal(u.pathname, `/runs/${id}/report`);
  assert.deepEqual([...u.searchParams.keys()].sort(), ["exp", "sig"]);
  assert.equal(new Date(expiresAt).getTime(), Number(u.searchParams.get("exp")) * 1000);
  assert.ok(new Date(expiresAt).getTime() > Date.now());
  assert.ok(new Date(expiresAt).getTime() <= Date.now() + config.DUT_SHARE_LINK_TTL_SECONDS * 1000);

  const page = await app.request(local(url)); // no Authorization header
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
  assert.equal(page.headers.get("cache-control"), "private, no-store");
  assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'none'/);
  const report = await (await app.request(`/api/test-runs/${id}/report.json`, { headers: auth })).json();
  assert.equal(page.headers.get("x-report-sha256"), report.reportSha256);
  const html = await page.text();
  assert.ok(html.includes(report.reportSha256));
  assert.ok(html.includes(`Shared link, valid until ${expiresAt}`));

  // The link opens the page only: the JSON stays behind the admin token.
  const json = await app.request(`/api/test-runs/${id}/report.json${u.search}`);
  assert.equal(json.status, 401);
  await json.body?.cancel();
});

dbTest("a tampered or expired share link is 403 and no token at all is 401", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const id = await finishedRun(app, auth);
  const other = await finishedRun(app, auth);
  const { url } = await (await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth)))
    .json();
  const u = new URL(url);
  const exp = u.searchParams.get("exp")!;
  const sig = u.searchParams.get("sig")!;
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
  const status = async (path: string, headers: Record<string, string> = {}) => {
    const res = await app.request(path, { headers });
    await res.body?.cancel();
    return res.status;
  };

  assert.equal(await status(`/runs/${id}/report?exp=${exp}&sig=${sig}`), 200, "the link as issued");
  const cases: Array<[string, string]> = [
    ["signature changed (first character)", `/runs/${id}/report?exp=${exp}&sig=${flip(sig, 0)}`],
    ["signature changed (last character)", `/runs/${id}/report?exp=${exp}&sig=${flip(sig, sig.length - 1)}`],
    ["signature truncated", `/runs/${id}/report?exp=${exp}&sig=${sig.slice(0, -2)}`],
    ["expiry moved one second later", `/runs/${id}/report?exp=${Number(exp) + 1}&sig=${sig}`],
    ["expiry moved far later", `/runs/${id}/report?exp=${Number(exp) + 86400 * 365}&sig=${sig}`],
    ["expiry not a number", `/runs/${id}/report?exp=soon&sig=${sig}`],
    ["path of another run", `/runs/${other}/report?exp=${exp}&sig=${sig}`],
    ["signature without expiry", `/runs/${id}/report?sig=${sig}`],
    ["expiry without signature", `/runs/${id}/report?exp=${exp}`],
    ["empty signature", `/runs/${id}/report?exp=${exp}&sig=`],
  ];
  for (const [what, path] of cases) assert.equal(await status(path), 403, what);
  // A sent bearer token is judged on its own (issue 46 point 3): beside a valid admin token a tampered or
  // empty link changes nothing; beside an invalid token it opens nothing.
  assert.equal(await status(`/runs/${id}/report?exp=${exp}&sig=${flip(sig, 3)}`, auth), 200);
  assert.equal(await status(`/runs/${id}/report?exp=&sig=`, auth), 200);
  assert.equal(
    await status(`/runs/${id}/report?exp=${exp}&sig=${sig}`, { authorization: "Bearer not-a-token" }),
    401,
  );

  const expired = await shareLink(TEST_ADMIN_TOKEN, "http://localhost", id, -60);
  assert.equal(await status(local(expired.url)), 403, "expired a minute ago");
  const foreign = await shareLink("another-admin-token-another-admin-token", "http://localhost", id, 3600);
  assert.equal(await status(local(foreign.url)), 403, "signed with another ADMIN_TOKEN (rotation revokes)");

  const none = await app.request(`/runs/${id}/report`);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get("content-type"), "application/problem+json");
  await none.body?.cancel();
  assert.equal(await status(`/runs/${id}/report`, auth), 200, "the admin token alone");
});

dbTest("share links use DUT_PUBLIC_URL and exist only for finished runs", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules(), {
    DUT_PUBLIC_URL: "https://dutlab.example/",
    DUT_SHARE_LINK_TTL_SECONDS: "600",
  });
  const id = await finishedRun(app, auth);
  const { url, expiresAt } =
    await (await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth)))
      .json();
  assert.ok(url.startsWith(`https://dutlab.example/runs/${id}/report?exp=`), url);
  assert.ok(new Date(expiresAt).getTime() <= Date.now() + 600_000);

  const active = await startRun(app, auth, { planIdentifier: PLAN });
  const share = (x: string) => app.request(`/api/test-runs/${x}/share`, jsonReq("POST", undefined, auth));
  assert.equal((await share(active.executionId)).status, 404, "no report yet");
  assert.equal((await share("00000000-0000-4000-8000-000000000000")).status, 404);
  const page = await app.request(`/runs/${active.executionId}/report`, { headers: auth });
  assert.equal(page.status, 404, "the page of an unfinished run");
  await page.body?.cancel();
});
