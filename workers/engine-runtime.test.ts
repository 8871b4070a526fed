/**
 * The runtime's policy (which models load, when, with which options). The engine here is a recording
 * stand-in because what is checked is the call pattern into it; real transcription through the same
 * runtime is in engine-jobs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine/errors.ts';
import { createEngineRuntime, type EngineCreateOptions, type EngineFactories } from './engine-runtime.ts';

function recordingFactories(failFirstLoadOf?: string) {
  const created: EngineCreateOptions[] = [];
  const closed: string[] = [];
  const calls: Array<{ model: string; source: string; options: unknown; signal: boolean }> = [];
  let failed = false;
  const factories: EngineFactories = {
    async resolveModel(name) {
      return { name, path: `/models/${name}.bin` };
    },
    async createEngine(options) {
      if (failFirstLoadOf && options.modelPath.includes(failFirstLoadOf) && !failed) {
        failed = true;
        throw new EngineError('MODEL_LOAD_FAILED', 'first load fails');
      }
      created.push(options);
      return {
        async transcribe(source, asr, run) {
          calls.push({
            model: options.modelPath,
            source: typeof source === 'string' ? source : 'stream',
            options: asr,
            signal: run?.signal instanceof AbortSignal,
          });
          return { language: 'en', duration: 1, segments: [] };
        },
        async close() {
          closed.push(options.modelPath);
        },
      };
    },
  };
  return { factories, created, closed, calls };
}

const ctx = () => ({ attempt: 1, signal: new AbortController().signal, onProgress: () => {} });

describe('engine runtime', () => {
  it('loads the default model at start, once, with the configured options', async () => {
    const r = recordingFactories();
    const runtime = await createEngineRuntime(
      { model: 'tiny', models: ['base'], useGpu: false, threads: 2, sourceHosts: ['media.example'] },
      r.factories,
    );
    expect(r.created).toEqual([
      {
        modelPath: '/models/tiny.bin',
        load: { useGpu: false },
        threads: 2,
        sourcePolicy: { mode: 'allowlist', hostSuffixes: ['media.example'] },
      },
    ]);
    await runtime.processor({ id: 'j1', source: '/a.wav', options: { language: 'de', wordTimestamps: false } }, ctx());
    await runtime.processor({ id: 'j2', source: '/b.wav', options: { language: 'auto', model: 'tiny' } }, ctx());
    await runtime.processor({ id: 'j3', source: '/c.wav', options: { model: 'base' } }, ctx());
    expect(r.created).toHaveLength(2);
    expect(r.calls).toEqual([
      { model: '/models/tiny.bin', source: '/a.wav', options: { language: 'de', wordTimestamps: false }, signal: true },
      { model: '/models/tiny.bin', source: '/b.wav', options: {}, signal: true },
      { model: '/models/base.bin', source: '/c.wav', options: {}, signal: true },
    ]);
    await runtime.close();
    expect(r.closed.sort()).toEqual(['/models/base.bin', '/models/tiny.bin']);
  });

  it('refuses a model the worker does not serve, and retries a load that failed', async () => {
    const r = recordingFactories('base');
    const runtime = await createEngineRuntime({ model: 'tiny', models: ['base'] }, r.factories);
    await expect(
      runtime.processor({ id: 'x', source: '/a.wav', options: { model: 'large-v3' } }, ctx()),
    ).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
    });
    await expect(
      runtime.processor({ id: 'y', source: '/a.wav', options: { model: 'base' } }, ctx()),
    ).rejects.toMatchObject({
      code: 'MODEL_LOAD_FAILED',
    });
    await runtime.processor({ id: 'z', source: '/a.wav', options: { model: 'base' } }, ctx());
    expect(r.created.map((c) => c.modelPath)).toEqual(['/models/tiny.bin', '/models/base.bin']);
    await runtime.close();
  });

  it('fetches a job that brings its own source policy under that policy, others through the engine', async () => {
    const r = recordingFactories();
    const runtime = await createEngineRuntime({ model: 'tiny' }, r.factories);
    const allowlist = { mode: 'allowlist' as const, hostSuffixes: ['media.example'] };
    // The real SafeFetcher refuses these before any connection is made.
    await expect(
      runtime.processor(
        { id: 'a', source: 'https://elsewhere.example/a.mp3', options: { sourcePolicy: allowlist } },
        ctx(),
      ),
    ).rejects.toMatchObject({ code: 'SOURCE_HOST_NOT_ALLOWED' });
    await expect(
      runtime.processor({ id: 'b', source: 'http://media.example/a.mp3', options: { maxBytes: 1000 } }, ctx()),
    ).rejects.toMatchObject({ code: 'SOURCE_SCHEME_NOT_ALLOWED' });
    await runtime.processor({ id: 'c', source: 'https://media.example/c.mp3' }, ctx());
    expect(r.calls.map((c) => c.source)).toEqual(['https://media.example/c.mp3']);
    await runtime.close();
  });

  it('a job cancelled while its model loads stops waiting at once; the load goes on for the next job, and close() stops it', async () => {
    const r = recordingFactories();
    const resolveSignals: AbortSignal[] = [];
    let release!: () => void;
    const held = new Promise<void>((res) => {
      release = res;
    });
    const resolveModel = r.factories.resolveModel;
    r.factories.resolveModel = async (name, options) => {
      if (name === 'base') {
        resolveSignals.push(options!.signal!);
        await held; // a download in progress
      }
      return resolveModel(name, options);
    };
    const runtime = await createEngineRuntime({ model: 'tiny', models: ['base', 'small'] }, r.factories);
    const job = { id: 'b1', source: '/a.wav', options: { model: 'base' } };
    const ac = new AbortController();
    const cancelled = runtime.processor(job, { ...ctx(), signal: ac.signal });
    const patient = runtime.processor({ ...job, id: 'b2' }, ctx());
    ac.abort('cancelled');
    await expect(cancelled).rejects.toMatchObject({ code: 'ABORTED' });
    expect(resolveSignals).toHaveLength(1);
    expect(resolveSignals[0]!.aborted).toBe(false); // one job leaving does not cancel the shared load
    release();
    await patient;
    expect(r.calls.map((c) => c.model)).toEqual(['/models/base.bin']);

    // A load still running when the worker closes is told to stop.
    let smallSignal: AbortSignal | undefined;
    r.factories.resolveModel = async (name, options) => {
      smallSignal = options!.signal;
      await new Promise<void>((_res, rej) =>
        options!.signal!.addEventListener('abort', () => rej(new Error('stopped'))),
      );
      return resolveModel(name, options);
    };
    const late = runtime.processor({ ...job, id: 's1', options: { model: 'small' } }, ctx());
    await runtime.close();
    expect(smallSignal?.aborted).toBe(true);
    await expect(late).rejects.toThrow();
  });
});
