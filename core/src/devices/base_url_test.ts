import assert from "node:assert/strict";
import { normaliseBaseUrl, sameBaseUrl } from "./base_url.ts";
import { parseDeviceNetworks, UNLISTED } from "../transport/networks.ts";

const rules = { pathAllowed: false, networks: UNLISTED };

// Cases as data: what was typed → the stored form, or (a RegExp) the refusal naming the part.
const CASES: Array<[string, string | RegExp]> = [
  ["https://fw1.lab", "https://fw1.lab"],
  ["HTTPS://FW1.Lab:443/", "https://fw1.lab"], // upper-case scheme and host, default port, trailing slash
  ["https://fw1.lab:8443", "https://fw1.lab:8443"],
  ["  https://127.0.0.1:8443/ ", "https://127.0.0.1:8443"],
  ["https://[::1]:8443", "https://[::1]:8443"],
  ["https://[0:0:0:0:0:0:0:1]", "https://[::1]"],
  ["https://bücher.example", "https://xn--bcher-kva.example"],
  ["https://fw1.lab:0", /^has port 0/],
  ["https://fw1.lab/?x=1", /^must have no query \("\?x=1"\)/],
  ["https://fw1.lab?", /^must have no query/],
  ["https://fw1.lab/#top", /^must have no fragment \("#top"\)/],
  ["https://fw1.lab/api/v1", /^must have no path \("\/api\/v1"\)/],
  [
    "https://2130706433:8443",
    /^has host "2130706433", an IPv4 address not in dotted decimal .*write 127\.0\.0\.1/,
  ],
  ["https://0x7f.1", /^has host "0x7f\.1", an IPv4 address not in dotted decimal/],
  ["https://0177.0.0.1", /not in dotted decimal/],
  ["https://127.1", /not in dotted decimal/],
  ["https://169.254.169.254", /^host 169\.254\.169\.254 is the cloud metadata service's address/],
  ["https://[fe80::1]", /^host fe80::1 is a link-local address/],
  ["https://[::ffff:a9fe:a9fe]", /is the cloud metadata service's address/],
  ["http://fw1.lab", /^must use https:\/\//],
  ["https://u:p@fw1.lab", /^must not carry credentials/],
];

Deno.test("a base URL is stored in one form, or refused naming the part", () => {
  for (const [input, want] of CASES) {
    const r = normaliseBaseUrl(input, rules);
    if (typeof want === "string") assert.deepEqual(r, { url: want }, input);
    else assert.match("error" in r ? r.error : `accepted as ${r.url}`, want, input);
  }
});

Deno.test("a path is kept only for an adapter that declares baseUrlPath", () => {
  assert.deepEqual(normaliseBaseUrl("https://Proxy.lab/FW1/", { ...rules, pathAllowed: true }), {
    url: "https://proxy.lab/FW1",
  });
  assert.deepEqual(normaliseBaseUrl("https://proxy.lab/", { ...rules, pathAllowed: true }), {
    url: "https://proxy.lab",
  });
});

Deno.test("a literal address is checked against DUT_DEVICE_NETWORKS; a name is left to connect time", () => {
  const r = parseDeviceNetworks("10.20.0.0/16");
  assert.ok("networks" in r);
  const listed = { pathAllowed: false, networks: r.networks };
  assert.deepEqual(normaliseBaseUrl("https://10.20.0.5", listed), { url: "https://10.20.0.5" });
  assert.match((normaliseBaseUrl("https://127.0.0.1:8443", listed) as { error: string }).error, /loopback/);
  assert.match(
    (normaliseBaseUrl("https://192.0.2.1", listed) as { error: string }).error,
    /^host 192\.0\.2\.1 is not in DUT_DEVICE_NETWORKS/,
  );
  assert.deepEqual(normaliseBaseUrl("https://fw1.elsewhere", listed), { url: "https://fw1.elsewhere" });
});

Deno.test("a URL stored as typed before is the same address as its normal form", () => {
  assert.ok(sameBaseUrl("https://FW1:443/", "https://fw1"));
  assert.ok(!sameBaseUrl("https://fw1/api", "https://fw1"));
  assert.ok(!sameBaseUrl("https://fw1:8443", "https://fw1"));
});
