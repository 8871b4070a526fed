/**
 * Password hashing: Argon2id with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane),
 * computed by Node's own `crypto.argon2` (OpenSSL's implementation, Node ≥ 24.7), stored as
 * a PHC string so the parameters can be raised later and old hashes still verify.
 */

import { argon2, randomBytes, timingSafeEqual } from 'node:crypto';

export interface Argon2Params {
  memoryKiB: number;
  passes: number;
  parallelism: number;
}

/** OWASP Password Storage Cheat Sheet, Argon2id option 1 (m=19 MiB, t=2, p=1). */
export const OWASP_ARGON2ID: Readonly<Argon2Params> = Object.freeze({ memoryKiB: 19_456, passes: 2, parallelism: 1 });

const TAG_LENGTH = 32;
const MAX_PASSWORD_BYTES = 1024;

function derive(password: string, salt: Buffer, p: Argon2Params): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    argon2(
      'argon2id',
      {
        message: Buffer.from(password.normalize('NFKC'), 'utf8'),
        nonce: salt,
        parallelism: p.parallelism,
        tagLength: TAG_LENGTH,
        memory: p.memoryKiB,
        passes: p.passes,
      },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string, params: Argon2Params = OWASP_ARGON2ID): Promise<string> {
  if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) throw new RangeError('password too long');
  const salt = randomBytes(16);
  const key = await derive(password, salt, params);
  const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
  return `$argon2id$v=19$m=${params.memoryKiB},t=${params.passes},p=${params.parallelism}$${b64(salt)}$${b64(key)}`;
}

const PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

/** False for a wrong password or a malformed hash; never throws on bad input. */
export async function verifyPassword(password: string, phc: string): Promise<boolean> {
  const m = PHC.exec(phc);
  if (!m || Buffer.byteLength(password) > MAX_PASSWORD_BYTES) return false;
  const params = { memoryKiB: Number(m[1]), passes: Number(m[2]), parallelism: Number(m[3]) };
  const expected = Buffer.from(m[5]!, 'base64');
  const key = await derive(password, Buffer.from(m[4]!, 'base64'), params);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

let dummyHash: Promise<string> | undefined;
/**
 * A hash to verify against when the account does not exist, so that an unknown email
 * costs the same Argon2 work as a wrong password and timing does not tell them apart.
 */
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return dummyHash;
}
