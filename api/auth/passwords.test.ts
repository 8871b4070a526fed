import { describe, expect, it } from 'vitest';
import { hashPassword, OWASP_ARGON2ID, verifyPassword } from './passwords.ts';

describe('argon2id password hashing', () => {
  it('stores a PHC string with OWASP parameters and verifies only the right password', async () => {
    const h = await hashPassword('correct horse battery staple');
    expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(await verifyPassword('correct horse battery staple', h)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', h)).toBe(false);
    expect(OWASP_ARGON2ID.memoryKiB).toBeGreaterThanOrEqual(19_456);
  });

  it('salts every hash', async () => {
    expect(await hashPassword('same')).not.toBe(await hashPassword('same'));
  });

  it('verifies a hash made with other parameters (they travel in the PHC string)', async () => {
    const h = await hashPassword('pw', { memoryKiB: 64, passes: 3, parallelism: 4 });
    expect(h).toContain('$m=64,t=3,p=4$');
    expect(await verifyPassword('pw', h)).toBe(true);
  });

  it('rejects malformed hashes without throwing', async () => {
    expect(await verifyPassword('pw', 'plain')).toBe(false);
    expect(await verifyPassword('pw', '$argon2i$v=19$m=64,t=3,p=4$AAAA$AAAA')).toBe(false);
  });
});
