/**
 * Teardown for servers a test started. An afterAll runs even when its beforeAll failed before the
 * server existed; `new Promise((r) => server?.close(r))` then never settles and the hook hangs until
 * its timeout, hiding the real failure. This closes what was created and returns at once otherwise.
 */
import type { Server } from 'node:net';

/** Drops open connections (HTTP servers keep idle keep-alive sockets) and closes `server`, if there is one. */
export async function closeServer(server: (Server & { closeAllConnections?: () => void }) | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections?.();
  // A server that never listened reports ERR_SERVER_NOT_RUNNING to the callback: nothing is left open.
  await new Promise<void>((done) => server.close(() => done()));
}
