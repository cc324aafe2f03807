import { ProblemSchema } from "../api/schemas.ts";

const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ProblemSchema } },
});

/** Problem responses shared by the admin routes. */
export const problemResponses = {
  400: problem("Invalid request (the problem's `errors` name each offending field)"),
  401: problem("Missing or invalid bearer token"),
  413: problem("Request body over the size limit"),
  503: problem(
    "The database is unreachable or dropped the connection (type `urn:dutlab:problem:unavailable`); " +
      "retry after the `Retry-After` seconds",
  ),
} as const;

export const notFoundResponse = { 404: problem("Unknown id") } as const;
export const conflictResponse = { 409: problem("Conflict with the current state") } as const;
export const unprocessableResponse = { 422: problem("Well-formed but not acceptable") } as const;
export { problem as problemResponse };

export const json = <T>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
