/**
 * api/tick-maps.ts: after full garbage collections with no tick queued, a new tick object is still
 * built through the same V8 maps as the one held (checked with V8's natives, in a child process).
 */

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const MODULE = fileURLToPath(new URL('./tick-maps.ts', import.meta.url));

const SCRIPT = `
import { createHook } from 'node:async_hooks';
const { heldTick } = await import(${JSON.stringify(MODULE)});
const held = heldTick();
gc();
gc();
let fresh;
const hook = createHook({ init(_id, type, _trigger, resource) { if (type === 'TickObject') fresh = resource; } });
hook.enable();
process.nextTick(() => {});
hook.disable();
console.log(JSON.stringify({ held: typeof held, fresh: typeof fresh, sameMap: %HaveSameMap(held, fresh) }));
`;

describe('tick maps', () => {
  it('holds a tick object whose maps survive full collections', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--expose-gc',
      '--allow-natives-syntax',
      '--input-type=module',
      '-e',
      SCRIPT,
    ]);
    expect(JSON.parse(stdout)).toEqual({ held: 'object', fresh: 'object', sameMap: true });
  });
});
