/**
 * The shared fixtures the workers' tests read (../shared/fixtures from the repo root), checked by
 * sha256, with a clear failure when the folder or a file is missing or altered.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export const FIXTURES = resolve(import.meta.dirname, '../../../shared/fixtures');

const JFK_WAV = {
  path: 'speech/jfk/jfk.wav',
  sha256: '59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e',
};

export async function jfkWav(): Promise<string> {
  if (!existsSync(FIXTURES)) {
    throw new Error(
      `The shared fixtures folder is missing: expected ${FIXTURES} (../shared/fixtures from the repo root).`,
    );
  }
  const path = join(FIXTURES, JFK_WAV.path);
  if (!existsSync(path)) throw new Error(`Fixture missing: ${path}`);
  const sum = createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
  if (sum !== JFK_WAV.sha256) throw new Error(`Fixture ${path} has sha256 ${sum}, expected ${JFK_WAV.sha256}.`);
  return path;
}
