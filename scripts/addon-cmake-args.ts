/** The CMake configure arguments every build of the addon shares (scripts/build-addon.ts, scripts/tsan.ts). */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * `-S … -B … -G Ninja`, the build type, and where whisper.cpp's sources, Node's API headers and the
 * built addon are; each caller appends its own switches (CUDA, sanitizer flags).
 */
export function addonCmakeArgs(root: string, o: { buildDir: string; outDir: string; buildType: string }): string[] {
  const require = createRequire(join(root, 'package.json'));
  return [
    '-S',
    join(root, 'engine/asr/native'),
    '-B',
    o.buildDir,
    '-G',
    'Ninja',
    `-DCMAKE_BUILD_TYPE=${o.buildType}`,
    `-DWHISPER_SOURCE_DIR=${join(root, 'node_modules/nodejs-whisper/cpp/whisper.cpp')}`,
    `-DNODE_API_HEADERS_DIR=${(require('node-api-headers') as { include_dir: string }).include_dir}`,
    `-DNODE_ADDON_API_DIR=${dirname(require.resolve('node-addon-api/napi.h'))}`,
    `-DADDON_OUTPUT_DIR=${o.outDir}`,
  ];
}
