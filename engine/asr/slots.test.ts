import { describe, expect, it } from 'vitest';
import { Slots } from './slots.ts';

describe('Slots', () => {
  it('grants up to size at once, then in arrival order as slots are released', async () => {
    const slots = new Slots(2);
    const order: string[] = [];
    const r1 = await slots.acquire();
    const r2 = await slots.acquire();
    const waiting = ['a', 'b', 'c'].map((name) =>
      slots.acquire().then((release) => {
        order.push(name);
        return release;
      }),
    );
    expect(slots.busy).toBe(2);
    expect(slots.waiting).toBe(3);
    r1();
    r1(); // a second release of the same grant is a no-op
    const ra = await waiting[0]!;
    expect(order).toEqual(['a']);
    expect(slots.busy).toBe(2);
    r2();
    ra();
    await Promise.all(waiting.slice(1));
    expect(order).toEqual(['a', 'b', 'c']);
    for (const p of waiting.slice(1)) (await p)();
    expect(slots.busy).toBe(0);
    expect(slots.waiting).toBe(0);
  });

  it('an aborted waiter leaves the line and takes no slot', async () => {
    const slots = new Slots(1);
    const release = await slots.acquire();
    const ac = new AbortController();
    const aborted = slots.acquire(ac.signal);
    const next = slots.acquire();
    ac.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'ABORTED' });
    expect(slots.waiting).toBe(1);
    release();
    (await next)();
    expect(slots.busy).toBe(0);
  });

  it('refuses at once when the signal has already fired', async () => {
    const slots = new Slots(1);
    await expect(slots.acquire(AbortSignal.abort())).rejects.toMatchObject({ code: 'ABORTED' });
    expect(slots.busy).toBe(0);
  });
});
