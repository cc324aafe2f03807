import assert from "node:assert/strict";
import { ConflictError, InvalidInputError, NotFoundError, UnavailableError } from "../errors.ts";
import { domainProblem, HttpProblem } from "./problem.ts";

Deno.test("domain errors carry their cause and map to one problem each", () => {
  const cause = new Error("unique violation");
  const conflict = new ConflictError("taken", {
    cause,
    errors: [{ field: "hostname", message: "is taken" }],
  });
  assert.equal(conflict.cause, cause);
  const p409 = domainProblem(conflict)!;
  assert.deepEqual([p409.status, p409.slug, p409.detail, p409.extra], [409, "conflict", "taken", {
    errors: [{ field: "hostname", message: "is taken" }],
  }]);
  const p404 = domainProblem(new NotFoundError("No device"))!;
  assert.deepEqual([p404.status, p404.slug, p404.title, p404.extra], [404, "not-found", "Not found", {}]);
  const errors = [{ field: "vendor", message: "unknown" }];
  const p400 = domainProblem(new InvalidInputError(`"vendor": unknown`, { errors }))!;
  assert.deepEqual([p400.status, p400.slug, p400.extra], [400, "validation", { errors }]);
  const p422 = domainProblem(new InvalidInputError("no adapter", { errors, unprocessable: true }))!;
  assert.deepEqual([p422.status, p422.slug, p422.extra], [422, "unprocessable", { errors }]);
  const active = domainProblem(new ConflictError("active", { extra: { activeExecutionId: "x" } }))!;
  assert.deepEqual(active.extra, { activeExecutionId: "x" });
  assert.ok(p404 instanceof HttpProblem);
  const p503 = domainProblem(
    new UnavailableError("pdf", "PDF rendering unavailable", "busy", { retryAfterSeconds: 30 }),
  )!;
  assert.deepEqual(
    [p503.status, p503.slug, p503.title, p503.detail, p503.extra],
    [503, "pdf-unavailable", "PDF rendering unavailable", "busy", { retryAfterSeconds: 30 }],
  );
  assert.equal(domainProblem(new Error("other")), undefined);
});
