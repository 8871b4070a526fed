/**
 * `transcribe --self-check`'s exits when batching does not verify, end to end: a child process whose
 * batcher carries a fault that only tests can set (test-support/asr-fault.ts, preloaded with --import).
 * Exit 3: the canary differed and the process fell back. Exit 1: the canary proved nothing. Exit 0 with
 * the width it licenses: a canary whose windows met narrower than the batch.
 * (Exit 0, verified, is cli/transcribe.test.ts'.) On synthetic-micro: what is tested is the command's
 * exits; the check's own behaviour is engine/asr/self-check*.test.ts'. With flash attention, whose
 * micro windows cost a third of the plain path's.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { resolveModel } from '../models/index.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'cli/bin/transcribe.js');
const PRELOAD = join(ROOT, 'test-support/asr-fault.ts');

function selfCheck(fault: string, batch = 2): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [
        '--import',
        PRELOAD,
        BIN,
        '--self-check',
        '--model',
        'synthetic-micro',
        '--batch-size',
        `${batch}`,
        '--flash-attn',
      ],
      { cwd: ROOT, timeout: 115_000, env: { ...process.env, ASR_TEST_FAULT: fault } },
      (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  await resolveModel('synthetic-micro');
});

it('a batcher that corrupts a window: FELL BACK with the differences, exit 3', async () => {
  const r = await selfCheck('perturb-slot');
  expect(r.stdout).toMatch(
    /^batching FELL BACK to unbatched decoding \(cpu, per-call attention, flash attention on, encoder batch 2/,
  );
  expect(r.stdout).toMatch(/^ {2}canary \d+ \(\d+ s\) segment \d+/m);
  expect(r.code).toBe(3);
}, 120_000);

it('a canary that compares too few tokens: SELF_CHECK_INCONCLUSIVE, exit 1', async () => {
  const r = await selfCheck('short-canary');
  expect(r.stderr).toMatch(/^error: SELF_CHECK_INCONCLUSIVE the canary proved nothing/m);
  expect(r.stdout).toBe('');
  expect(r.code).toBe(1);
}, 120_000);

it('a canary that met narrower than the batch: verified, and the line says where batches stop, exit 0', async () => {
  const r = await selfCheck('narrow-canary', 4);
  expect(r.stdout).toMatch(
    /^batching verified \(cpu, per-call attention, flash attention on, encoder batch 4, model synthetic-micro\): .*only 2 of 4 windows met in one step, so batches stop at 2\)$/m,
  );
  expect(r.code).toBe(0);
}, 120_000);
