/**
 * The route table, taken from the live app: an onRoute hook records every route as it is
 * registered, so a route added anywhere joins the discovery documents, the API reference
 * and the link checks with nothing else to edit. Installed first in buildApp.
 */

import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';

export type RouteAuth = 'none' | 'session' | 'x402';

export interface RouteEntry {
  method: string;
  /** Fastify's form, `:id` for a parameter. */
  url: string;
  operationId: string | undefined;
  summary: string | undefined;
  tags: readonly string[];
  auth: RouteAuth;
  /** `schema.hide`: kept out of the OpenAPI file and the documents (the OpenAPI route itself). */
  hidden: boolean;
  schema: Readonly<FastifySchema> | undefined;
}

type DocSchema = FastifySchema & {
  operationId?: string;
  summary?: string;
  tags?: string[];
  hide?: boolean;
  security?: unknown[];
  response?: Record<string, unknown>;
};

export class RouteTable {
  readonly #routes: RouteEntry[] = [];
  readonly #app: FastifyInstance;

  private constructor(app: FastifyInstance) {
    this.#app = app;
  }

  /** Must run before any route is registered: Fastify calls onRoute only for later routes. */
  static install(app: FastifyInstance): RouteTable {
    const table = new RouteTable(app);
    app.addHook('onRoute', (route: RouteOptions) => {
      for (const method of [route.method].flat()) {
        // Fastify adds a HEAD twin to every GET; the documents name the GET.
        if (method === 'HEAD') continue;
        table.#routes.push(entry(method, route.url, route.schema as DocSchema | undefined));
      }
    });
    return table;
  }

  /** Every route an outside client may call, in registration order. */
  get public(): readonly RouteEntry[] {
    return this.#routes.filter((r) => !r.hidden);
  }

  /** The app's shared schemas (`app.addSchema`), which route schemas name by `$ref: 'Id#'`. */
  sharedSchemas(): Readonly<Record<string, unknown>> {
    return this.#app.getSchemas() as Record<string, unknown>;
  }

  find(method: string, url: string): RouteEntry | undefined {
    return this.#routes.find((r) => r.method === method && r.url === url);
  }

  /** Whether `path` (a concrete path, no query) is served by some route for `method`. */
  matches(method: string, path: string): boolean {
    return this.#routes.some((r) => r.method === method && routePattern(r.url).test(path));
  }
}

function entry(method: string, url: string, schema: DocSchema | undefined): RouteEntry {
  const responses = Object.keys(schema?.response ?? {});
  const auth: RouteAuth =
    schema?.security && schema.security.length > 0 ? 'session' : responses.includes('402') ? 'x402' : 'none';
  return {
    method,
    url,
    operationId: schema?.operationId,
    summary: schema?.summary,
    tags: schema?.tags ?? [],
    auth,
    hidden: schema?.hide === true,
    schema,
  };
}

/** `/api/videos/:id` → a regex for concrete paths; `*` matches the rest. */
export function routePattern(url: string): RegExp {
  const parts = url.split('/').map((seg) => {
    if (seg === '*') return '.*';
    if (seg.startsWith(':')) return '[^/]+';
    return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${parts.join('/')}$`);
}

/** `/api/videos/:id` → `/api/videos/{id}`, the OpenAPI form. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
