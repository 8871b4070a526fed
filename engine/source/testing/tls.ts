/**
 * Test-only: a throwaway certificate authority and server certificates made with the system's
 * `openssl`, in a temp dir the caller removes. Nothing here is used outside tests.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  dir: string;
  ca: string;
  key: string;
  cert: string;
  /** A certificate for the same names signed by a CA nobody trusts. */
  untrusted: { key: string; cert: string };
  cleanup(): void;
}

/** `names` are DNS names and IP addresses for the server certificate's subjectAltName. */
export function makeTestPki(names: string[]): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'source-pki-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const san = names.map((n) => (/^[0-9.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  writeFileSync(
    join(dir, 'ext.cnf'),
    `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
  );
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'rogue']) {
    run('req', '-x509', ...ec, '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-days', '2', '-subj', `/CN=${ca} test CA`);
    run('req', ...ec, '-keyout', `${ca}-srv.key`, '-out', `${ca}-srv.csr`, '-subj', '/CN=source test origin');
    run(
      'x509',
      '-req',
      '-in',
      `${ca}-srv.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${ca}-srv.pem`,
      '-days',
      '2',
      '-extfile',
      'ext.cnf',
    );
  }
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    dir,
    ca: read('ca.pem'),
    key: read('ca-srv.key'),
    cert: read('ca-srv.pem'),
    untrusted: { key: read('rogue-srv.key'), cert: read('rogue-srv.pem') },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
