/**
 * Test-only: the fetcher the API's end-to-end tests hand to the service's transcriber, so
 * "own media" can be a real TLS origin on loopback. Never used by production code.
 */

import { SafeFetcher } from '../../engine/source/index.ts';

/** Trusts the test CA `ca`, any port, and resolves `host`, and no other name, to 127.0.0.1. */
export function loopbackMediaFetcher(ca: string, host: string): SafeFetcher {
  return new SafeFetcher({
    ca,
    dangerouslyAllowLoopback: true,
    // Test origins listen on ephemeral ports; production keeps to 443 unless an operator allows others.
    allowedPorts: 'any',
    lookup: async (name) => {
      if (name !== host) throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
}
