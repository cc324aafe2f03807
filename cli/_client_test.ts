import assert from "node:assert/strict";
import { problemLine } from "./_client.ts";

Deno.test("a 400's field errors the detail already says are printed once", () => {
  // The service's validation problem: the detail says each field and message, `errors` lists them again.
  const body = {
    type: "urn:dutlab:problem:validation",
    title: "Request validation failed",
    status: 400,
    detail: '"query.limit": Too small: expected number to be >=1',
    errors: [{ field: "query.limit", message: "Too small: expected number to be >=1" }],
  };
  const line = problemLine(400, body);
  assert.equal(line, 'HTTP 400: "query.limit": Too small: expected number to be >=1');
  assert.equal(line.split("Too small").length - 1, 1);
});

Deno.test("field errors the detail does not say are printed after it", () => {
  const body = {
    detail: "1 device(s) of the lab file conflict with the registry",
    errors: [{ field: "fw-1", message: 'managed by lab "lab1"' }],
  };
  assert.equal(
    problemLine(409, body),
    'HTTP 409: 1 device(s) of the lab file conflict with the registry (fw-1: managed by lab "lab1")',
  );
  assert.equal(problemLine(404, { title: "Not found" }), "HTTP 404: Not found");
});
