import type { OpenAPIHono } from "@hono/zod-openapi";
import { problems } from "./problem.ts";

/** The page's own start-up script (external, so that the page's CSP allows no inline script). */
const INIT = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("../openapi.json", new URL(".", location.href.replace(/\\/?$/, "/"))).href,
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: false,
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dutlab API reference</title>
<link rel="stylesheet" href="/api/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/api/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/docs/assets/init.js"></script>
</body>
</html>
`;

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self' data:";

/**
 * `GET /api/docs`: the API reference rendered by Swagger UI (npm swagger-ui-dist, Apache-2.0), whose bundle
 * and stylesheet the service serves itself (text imports of the pinned package; no CDN).
 */
export function docsRoutes(app: OpenAPIHono): void {
  app.get("/api/docs", (c) => c.html(PAGE, 200, { "content-security-policy": CSP }));
  app.get("/api/docs/assets/:file", async (c) => {
    const file = c.req.param("file");
    const headers = { "cache-control": "public, max-age=86400" };
    if (file === "init.js") return c.body(INIT, 200, { ...headers, "content-type": "text/javascript" });
    if (file === "swagger-ui-bundle.js") {
      const m = await import("swagger-ui-dist/swagger-ui-bundle.js", { with: { type: "text" } });
      return c.body(m.default, 200, { ...headers, "content-type": "text/javascript; charset=utf-8" });
    }
    if (file === "swagger-ui.css") {
      const m = await import("swagger-ui-dist/swagger-ui.css", { with: { type: "text" } });
      return c.body(m.default, 200, { ...headers, "content-type": "text/css; charset=utf-8" });
    }
    throw problems.notFound(`No file "${file}" in the API reference`);
  });
}
