// Loads the TSan build of the addon (scripts/tsan.ts passes its path) before any test loads a model.
import { useAddonAt } from '../../engine/asr/index.ts';

const path = process.env.WHISPER_ADDON_TSAN;
if (!path) throw new Error('WHISPER_ADDON_TSAN is not set: run these tests through `node scripts/tsan.ts`.');
useAddonAt(path);
