/**
 * The data-plane tools (list_videos, get_video, get_captions, list_projects, create_project)
 * through the official MCP client against the real routes: each tool answers what its REST
 * route answers the same session, refusals included, with the route's code.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Video } from '../storage/types.ts';
import { Client as CookieClient, startTestApp, type TestApp, testConfig } from '../testing/harness.ts';

const VTT = 'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there\n\n00:00:01.500 --> 00:00:03.000\nSecond cue\n';
const MEDIA_HOST = 'media.example.test';

type ToolAnswer = Awaited<ReturnType<Client['callTool']>>;
const errorOf = (res: ToolAnswer) => JSON.parse((res.content as Array<{ text: string }>)[0]!.text);

describe('data-plane tools over MCP', () => {
  let dir: string;
  let t: TestApp;
  let base: string;
  let alice: CookieClient;
  let bob: CookieClient;
  let video: Video;
  const clients: Client[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mcp-data-plane-'));
    t = await startTestApp(testConfig({ DATA_DIR: dir, MEDIA_HOSTS: MEDIA_HOST, RATE_LIMIT_MAX: '1000' }));
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    alice = new CookieClient(t.app);
    bob = new CookieClient(t.app);
    const a = await alice.signUp('alice-mcp@example.com');
    await bob.signUp('bob-mcp@example.com');
    video = await t.storage.createVideo({
      title: 'A talk',
      origin: 'recording',
      hostedVideoId: randomUUID().replaceAll('-', ''),
      workspaceId: a.activeWorkspaceId,
      ownerId: a.id,
    });
    const stored = await alice.request({
      method: 'POST',
      url: `/api/videos/${video.id}/captions`,
      csrf: true,
      payload: { format: 'vtt', content: VTT },
    });
    expect(stored.statusCode, stored.body).toBeLessThan(300);
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function mcpAs(who: CookieClient): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
      requestInit: { headers: { cookie: who.cookieHeader() } },
    });
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(transport);
    // Listing first makes the SDK client check each result against the tool's output schema.
    await client.listTools();
    clients.push(client);
    return client;
  }

  it('list_videos and get_video answer what the routes answer', async () => {
    const mcp = await mcpAs(alice);
    const list = await mcp.callTool({ name: 'list_videos', arguments: { origin: 'recording' } });
    expect(list.isError).toBeFalsy();
    const rest = await alice.request({ url: '/api/videos?origin=recording' });
    expect(rest.statusCode).toBe(200);
    expect(list.structuredContent).toEqual(rest.json());
    expect(JSON.stringify(list.structuredContent)).toContain(video.id);

    const one = await mcp.callTool({ name: 'get_video', arguments: { id: video.id } });
    expect(one.isError).toBeFalsy();
    expect(one.structuredContent).toEqual((await alice.request({ url: `/api/videos/${video.id}` })).json());

    // Arguments that do not match the tool's input schema are the protocol's invalid-params.
    const bad = await mcp.callTool({ name: 'list_videos', arguments: { starred: 'yes' } }).catch((e) => e);
    expect(bad.code).toBe(-32602);
    expect(bad.message).toContain('Invalid arguments for list_videos: starred must be one of "true", "false".');
  });

  it("another workspace's video is refused with the route's status and code", async () => {
    const mcp = await mcpAs(bob);
    const res = await mcp.callTool({ name: 'get_video', arguments: { id: video.id } });
    const rest = await bob.request({ url: `/api/videos/${video.id}` });
    expect(rest.statusCode).toBe(403);
    expect(res.isError).toBe(true);
    expect(errorOf(res)).toMatchObject({ statusCode: 403, code: rest.json<{ code: string }>().code });
  });

  it('get_captions gives the status, and the file as text when a format is asked', async () => {
    const mcp = await mcpAs(alice);
    const status = await mcp.callTool({ name: 'get_captions', arguments: { id: video.id } });
    expect(status.isError).toBeFalsy();
    expect(status.structuredContent).toMatchObject({ status: 'ready', hasTranscript: true });
    const file = await mcp.callTool({ name: 'get_captions', arguments: { id: video.id, format: 'vtt' } });
    expect(file.isError).toBeFalsy();
    const out = file.structuredContent as { mediaType: string; text: string };
    expect(out.mediaType).toMatch(/^text\/vtt/);
    expect(out.text).toContain('Second cue');
  });

  it('create_project then list_projects', async () => {
    const mcp = await mcpAs(alice);
    const created = await mcp.callTool({
      name: 'create_project',
      arguments: { title: 'Cut', sourceUrl: `https://${MEDIA_HOST}/clip.mp4`, duration: 12 },
    });
    expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
    const id = (created.structuredContent as { id: string }).id;
    const list = await mcp.callTool({ name: 'list_projects', arguments: { limit: 5 } });
    expect(list.isError).toBeFalsy();
    expect(list.structuredContent).toEqual((await alice.request({ url: '/api/projects?limit=5' })).json());
    expect(JSON.stringify(list.structuredContent)).toContain(id);

    const outside = await mcp.callTool({
      name: 'create_project',
      arguments: { title: 'Elsewhere', sourceUrl: 'https://elsewhere.example.org/a.mp4' },
    });
    expect(outside.isError).toBe(true);
    expect(errorOf(outside)).toMatchObject({ statusCode: 400, code: 'SOURCE_HOST_NOT_ALLOWED' });
  });
});
