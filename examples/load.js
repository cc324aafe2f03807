// A tiny k6 load script for the README's test-run snippet. Run it with the trend statistics the report
// needs (p(99) is not exported unless asked):
//   k6 run --summary-export=summary.json --summary-trend-stats="avg,min,med,max,p(90),p(95),p(99)" examples/load.js
// TARGET is the URL under load (default: the service's own liveness endpoint, harmless to hit).
import http from "k6/http";
import { check } from "k6";

export const options = { vus: 5, duration: "10s" };

export default function () {
  const res = http.get(__ENV.TARGET || "http://localhost:8080/healthz");
  check(res, { "status is 200": (r) => r.status === 200 });
}
