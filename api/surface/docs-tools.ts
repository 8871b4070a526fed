/**
 * The tools of the documentation MCP server (/mcp/docs): their names and schemas, which the
 * discovery documents list and the MCP server serves. A module of its own so that neither of
 * those two imports the other.
 */

import { NO_CONTROL_CHARS } from '../schemas.ts';

export interface DocsTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown> & { type: 'object' };
  outputSchema: Record<string, unknown> & { type: 'object' };
  annotations: { readOnlyHint: true; openWorldHint: false; title: string };
}

export const DOCS_TOOLS: readonly DocsTool[] = [
  {
    name: 'search_docs',
    title: 'Search the documentation',
    description:
      "Ranked search over the service's documents: discovery documents, pricing, auth and the API reference.",
    inputSchema: {
      type: 'object',
      required: ['query'],
      additionalProperties: false,
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 500, pattern: NO_CONTROL_CHARS },
        limit: { type: 'integer', minimum: 1, maximum: 20, default: 5 },
      },
    },
    outputSchema: {
      type: 'object',
      required: ['results'],
      properties: {
        results: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'title', 'url', 'score', 'snippet'],
            properties: {
              id: { type: 'string' },
              title: { type: 'string' },
              url: { type: 'string' },
              score: { type: 'number' },
              snippet: { type: 'string' },
            },
          },
        },
      },
    },
    annotations: { title: 'Search the documentation', readOnlyHint: true, openWorldHint: false },
  },
  {
    name: 'get_doc',
    title: 'Get a document',
    description: 'One document, whole, by the id search_docs gives.',
    inputSchema: {
      type: 'object',
      required: ['id'],
      additionalProperties: false,
      properties: { id: { type: 'string', minLength: 1, maxLength: 200, pattern: NO_CONTROL_CHARS } },
    },
    outputSchema: {
      type: 'object',
      required: ['id', 'title', 'url', 'mediaType', 'text'],
      properties: {
        id: { type: 'string' },
        title: { type: 'string' },
        url: { type: 'string' },
        mediaType: { type: 'string' },
        text: { type: 'string' },
      },
    },
    annotations: { title: 'Get a document', readOnlyHint: true, openWorldHint: false },
  },
];
