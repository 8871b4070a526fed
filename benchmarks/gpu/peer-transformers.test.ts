/**
 * gpu/peer-transformers.py's plumbing, on a machine without PyTorch: with stand-in torch and
 * transformers modules (testdata/fake-torch, which compute nothing) it must write the anchor's row
 * fields for every batch size, and fail with its documented exit codes and an {ok: false} JSON when
 * torch or CUDA is missing. The real API runs only on a GPU host (gpu/run.sh).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = join(import.meta.dirname, 'peer-transformers.py');
const FAKE = join(import.meta.dirname, 'testdata/fake-torch');
const python = spawnSync('python3', ['--version']).status === 0;
// Made in a hook, not at import: where the suite is skipped (no python3) no hook runs, and a folder
// made at import would never be removed.
let tmp = '';
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'peer-test-'));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function peer(args: string[], env: Record<string, string>) {
  const out = join(tmp, `${Object.keys(env).join('-') || 'plain'}-${args.join('').replace(/\W/g, '')}.json`);
  const r = spawnSync('python3', [SCRIPT, ...args, '--out', out], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: FAKE, PYTHONDONTWRITEBYTECODE: '1', ...env },
  });
  return { status: r.status, stderr: r.stderr, json: JSON.parse(readFileSync(out, 'utf8')) };
}

describe.skipIf(!python)('peer-transformers.py', () => {
  it('writes one row per batch size with the 2026-11-22 anchor fields', () => {
    const r = peer(['--batch-sizes', '1,8,24', '--runs', '2'], { FAKE_TORCH_CUDA: '1' });
    expect(r.status).toBe(0);
    expect(r.json).toMatchObject({ ok: true, shape: 'large-v3', device: 'cuda', dryRun: false, gpu: 'Fake GPU' });
    expect(r.json.dims).toMatchObject({ d_model: 1280, encoder_layers: 32, num_mel_bins: 128, vocab_size: 51866 });
    expect(r.json.rows.map((x: { batch: number }) => x.batch)).toEqual([1, 8, 24]);
    for (const row of r.json.rows) {
      expect(Object.keys(row)).toEqual(
        expect.arrayContaining(['batch', 'tokens', 'wall_s', 'encoder_s', 'ms_per_step', 'sec_per_audio_hour']),
      );
      expect(row.tokens).toBe(100);
      expect(row.wall_s_runs).toHaveLength(2);
    }
  });

  it('keeps the other batch sizes when one fails, and fails when all do', () => {
    const r = peer(['--batch-sizes', '1,8'], { FAKE_TORCH_CUDA: '1', FAKE_TORCH_OOM_BATCH: '8' });
    expect(r.status).toBe(0);
    expect(r.json.rows[0]).toMatchObject({ batch: 1, tokens: 100 });
    expect(r.json.rows[1]).toEqual({ batch: 8, error: 'RuntimeError: CUDA out of memory (fake)' });
    const all = peer(['--batch-sizes', '8'], { FAKE_TORCH_CUDA: '1', FAKE_TORCH_OOM_BATCH: '8' });
    expect(all.status).toBe(5);
    expect(all.json.error).toMatch(/every batch size failed/);
  });

  it('runs tiny on the CPU as a dry run', () => {
    const r = peer(['--batch-sizes', '1', '--device', 'cpu'], {});
    expect(r.status).toBe(0);
    expect(r.json).toMatchObject({ ok: true, shape: 'tiny', device: 'cpu', dryRun: true, gpu: null });
  });

  it('fails with 3 and says so when torch is missing', () => {
    const r = peer([], { FAKE_TORCH_MISSING: '1' });
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/PyTorch is not installed/);
    expect(r.json).toMatchObject({ ok: false, exitCode: 3 });
  });

  it('fails with 4 when CUDA is asked for and absent', () => {
    const r = peer([], { FAKE_TORCH_CUDA: '0' });
    expect(r.status).toBe(4);
    expect(r.json.error).toMatch(/CUDA is not available/);
  });

  it('fails with 2 on a bad batch list', () => {
    expect(peer(['--batch-sizes', '0'], {}).status).toBe(2);
  });
});
