/**
 * The operator's blocklist (PASSWORD_BLOCKLIST): passwords and phrases this service refuses
 * beyond the built-in lists, such as an organisation's name, product names, or a corpus of
 * breached passwords kept offline. Entries and passwords are compared in the same forms as the
 * famous phrases (`comparableForms`), so "Four score and seven years ago" on the list also
 * refuses "FourScoreAndSevenYearsAgo!" and "f0ur sc0re and seven years ag0". Held as a set of
 * those forms: a lookup costs the same for ten entries as for the file's cap of a million.
 */

import { comparableForms } from './password-policy.ts';

export class PasswordBlocklist {
  readonly #forms = new Set<string>();
  readonly size: number;

  constructor(entries: readonly string[]) {
    for (const e of entries) for (const f of comparableForms(e)) this.#forms.add(f);
    this.size = entries.length;
  }

  has(password: string): boolean {
    return comparableForms(password).some((f) => this.#forms.has(f));
  }
}
