/**
 * Keeps `process.nextTick` on V8's fast path for the life of the service, by holding one of its
 * tick objects so that the hidden classes (maps) they are built through are never collected.
 *
 * Node builds each tick as `{ [async_id_symbol]: …, [trigger_async_id_symbol]: …, [frame]: …,
 * callback, args }`. V8 records, for each of those computed-key stores, the one map it saw; the
 * maps come from Node's start-up snapshot and nothing else holds them, so the first full garbage
 * collection at a moment when no tick is queued (start-up has several: PGlite, the schemas)
 * clears them. The next tick then meets "another" map, the stores turn megamorphic for good, and
 * every nextTick goes through V8's runtime: about 0.5 µs each, 2 µs per HTTP request, a quarter
 * of `GET /api/health` (benchmarks/README.md, api-overhead). Which processes it hit depended on
 * when those collections fell.
 *
 * Run before anything else in the process (`npm start` loads it with `node --import`): once a
 * collection has cleared the maps, holding a tick no longer helps.
 */

import { createHook } from 'node:async_hooks';

let held: object | undefined;
// An init hook is the one way to see a tick object; it is on for this single tick only.
const hook = createHook({
  init(_asyncId, type, _triggerAsyncId, resource) {
    if (type === 'TickObject') held = resource;
  },
});
hook.enable();
process.nextTick(() => {});
hook.disable();

/** The tick object held (for the test). */
export function heldTick(): object | undefined {
  return held;
}
