/**
 * inlineRefs: a tool's schemas must stand alone, since an MCP client compiles them without
 * the app's schema registry.
 */

import { describe, expect, it } from 'vitest';
import { inlineRefs } from './tools.ts';

describe('inlineRefs', () => {
  const shared = {
    Video: {
      $id: 'Video',
      type: 'object',
      required: ['id'],
      properties: { id: { type: 'string' }, owner: { $ref: 'User#' } },
    },
    User: {
      $id: 'User',
      type: 'object',
      properties: { name: { type: 'string' } },
      definitions: { Id: { type: 'string' } },
    },
    Node: { $id: 'Node', type: 'object', properties: { next: { $ref: 'Node#' } } },
  };

  it('replaces references, nested ones too, and drops the $id that would clash', () => {
    expect(inlineRefs({ type: 'array', items: { $ref: 'Video#' } }, shared)).toEqual({
      type: 'array',
      items: {
        type: 'object',
        required: ['id'],
        properties: {
          id: { type: 'string' },
          owner: { type: 'object', properties: { name: { type: 'string' } }, definitions: { Id: { type: 'string' } } },
        },
      },
    });
  });

  it('follows a JSON pointer and keeps keywords beside the reference', () => {
    expect(inlineRefs({ $ref: 'User#/definitions/Id', description: 'who' }, shared)).toEqual({
      type: 'string',
      description: 'who',
    });
  });

  it('cuts a schema that refers to itself instead of unrolling it forever', () => {
    expect(inlineRefs({ $ref: 'Node#' }, shared)).toEqual({ type: 'object', properties: { next: {} } });
  });

  it('leaves an unknown reference out rather than sending one the client cannot resolve', () => {
    expect(inlineRefs({ $ref: 'Nope#', description: 'x' }, shared)).toEqual({ description: 'x' });
  });
});
