// The recorder (a module): the screen and the microphone, mixed into one audio track, go to
// MediaRecorder; every second's chunk is handed to tus-js-client as it is produced, so the upload
// runs while recording and a long recording is mostly stored when Stop is pressed. A dropped
// connection is retried from the server's offset (the chunks not yet acknowledged stay in memory).
// Without a session this is a guest recording: init answers a guest token that completes it, and
// that moves it into the account the guest then opens from here.

import {
  $,
  api,
  claimGuestRecordings,
  clock,
  percent,
  pollWithBackoff,
  rememberGuestRecording,
  session,
  shouldRetryUpload,
  showAccount,
  signInHref,
  tusEndpoint,
  uploadFailure,
} from './common.js';

// Small PATCHes keep the upload close behind the recorder. At the bitrate cap below that is at most
// about 5 PATCHes a second, well inside the TUS routes' budget of 1000 a minute.
const CHUNK_BYTES = 64 * 1024;
const VIDEO_BITS_PER_SECOND = 2_500_000;
const SLICE_MS = 1000;
// What may wait in memory for the network before the recording is stopped rather than grow without bound.
const MAX_PENDING_BYTES = 256 * 1024 * 1024;

const ui = {
  record: $('record'),
  stop: $('stop'),
  elapsed: $('elapsed'),
  progress: $('upload-progress'),
  bytes: $('upload-bytes'),
  status: $('status'),
  captions: $('captions'),
};

function say(text, isError = false) {
  ui.status.textContent = text;
  ui.status.classList.toggle('error', isError);
}

const kib = (n) => `${Math.round(n / 1024)} KiB`;

/** A Reader (what tus-js-client streams from): MediaRecorder's chunks in order, done after stop. */
function chunkReader(onOverflow) {
  const queue = [];
  let pending = 0;
  let ended = false;
  let wake = null;
  return {
    push(blob) {
      if (blob.size === 0) return;
      queue.push(blob);
      pending += blob.size;
      if (pending > MAX_PENDING_BYTES) onOverflow();
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    read() {
      return new Promise((resolve) => {
        const take = () => {
          wake = null;
          if (queue.length > 0) {
            const value = queue.shift();
            pending -= value.size;
            resolve({ value, done: false });
          } else if (ended) resolve({ value: undefined, done: true });
          else wake = take;
        };
        take();
      });
    },
    cancel() {
      queue.length = 0;
      ended = true;
    },
  };
}

async function captureStreams() {
  // Asked first, inside the click: the browser wants a fresh user gesture for the screen picker.
  const display = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: true });
  // No microphone (refused, or none) still records the screen and its own sound.
  const mic = await navigator.mediaDevices.getUserMedia({ audio: true }).catch(() => null);
  const audio = new AudioContext();
  const mix = audio.createMediaStreamDestination();
  for (const s of [display, mic]) if (s && s.getAudioTracks().length > 0) audio.createMediaStreamSource(s).connect(mix);
  const stream = new MediaStream([...display.getVideoTracks(), ...mix.stream.getAudioTracks()]);
  const release = () => {
    for (const s of [display, mic, stream]) for (const t of s?.getTracks() ?? []) t.stop();
    audio.close().catch(() => {});
  };
  return { display, stream, release };
}

function startUpload(reader, init, recorded) {
  let sent = 0;
  const done = new Promise((resolve, reject) => {
    const upload = new tus.Upload(reader, {
      endpoint: tusEndpoint(init.tus.endpoint),
      headers: init.tus.headers,
      chunkSize: CHUNK_BYTES,
      uploadLengthDeferred: true,
      retryDelays: [0, 1000, 3000, 5000, 10000],
      onShouldRetry: shouldRetryUpload,
      storeFingerprintForResuming: false,
      metadata: { filename: `${init.title}.webm`, filetype: 'video/webm' },
      onProgress: (bytes) => {
        sent = bytes;
        ui.bytes.textContent = `${kib(sent)} of ${kib(recorded())} sent`;
        ui.progress.value = recorded() > 0 ? Math.min(100, Math.floor((sent / recorded()) * 100)) : 0;
      },
      onError: reject,
      onSuccess: resolve,
    });
    upload.start();
  });
  return { done, sent: () => sent };
}

async function showCaptions(videoId, signal) {
  await pollWithBackoff(
    async () => {
      const s = await api(`/api/videos/${videoId}/captions`);
      ui.captions.textContent =
        s.status === 'ready'
          ? 'Captions ready'
          : s.status === 'processing'
            ? `Captions: being made…${percent(s.progress)}`
            : `No captions${s.error ? ` (${s.error.replace(/^[A-Z_]+: /, '')})` : ''}`;
      ui.captions.dataset.state = s.status;
      return s.status !== 'processing';
    },
    signal,
    4000,
  );
}

async function record(user) {
  ui.record.disabled = true;
  say('Choose what to share…');
  let capture;
  try {
    capture = await captureStreams();
  } catch (e) {
    ui.record.disabled = false;
    say(`Recording did not start: ${e.message}`, true);
    return;
  }
  const title = $('title').value.trim();
  let init;
  try {
    init = await api('/api/videos/multipart/init', { method: 'POST', body: JSON.stringify(title ? { title } : {}) });
  } catch (e) {
    capture.release();
    ui.record.disabled = false;
    say(`Upload could not start. ${uploadFailure(e)}`, true);
    return;
  }
  const mimeType = ['video/webm;codecs=vp8,opus', 'video/webm'].find((t) => MediaRecorder.isTypeSupported(t));
  const recorder = new MediaRecorder(capture.stream, {
    videoBitsPerSecond: VIDEO_BITS_PER_SECOND,
    ...(mimeType ? { mimeType } : {}),
  });
  let recorded = 0;
  const stop = () => {
    if (recorder.state !== 'inactive') recorder.stop();
  };
  const reader = chunkReader(() => {
    say('The network is too far behind: recording stopped.', true);
    stop();
  });
  recorder.addEventListener('dataavailable', (e) => {
    recorded += e.data.size;
    reader.push(e.data);
  });
  const stopped = new Promise((resolve) => recorder.addEventListener('stop', resolve, { once: true }));
  // Ending the share from the browser's own bar ends the recording as Stop would.
  capture.display.getVideoTracks()[0]?.addEventListener('ended', stop, { once: true });
  const upload = startUpload(reader, init, () => recorded);
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const tick = setInterval(() => {
    ui.elapsed.textContent = clock(seconds());
  }, 250);
  ui.stop.addEventListener('click', stop, { once: true });
  ui.stop.disabled = false;
  recorder.start(SLICE_MS);
  document.body.dataset.recording = 'true';
  say('Recording…');

  await stopped;
  const duration = seconds();
  clearInterval(tick);
  capture.release();
  reader.end();
  ui.stop.disabled = true;
  delete document.body.dataset.recording;
  say('Finishing the upload…');
  try {
    await upload.done;
    const body = { videoId: init.videoId, duration: Math.round(duration * 1000) / 1000 };
    if (init.guestToken) body.guestToken = init.guestToken;
    await api('/api/videos/multipart/complete', { method: 'POST', body: JSON.stringify(body) });
  } catch (e) {
    say(`Upload failed. ${uploadFailure(e)}`, true);
    ui.record.disabled = false;
    // The next recording's bar starts from nothing.
    ui.progress.value = 0;
    ui.bytes.textContent = '';
    // What reached the server is of no use without its end: removed now rather than left to the sweep.
    const body = { videoId: init.videoId, ...(init.guestToken ? { guestToken: init.guestToken } : {}) };
    api('/api/videos/multipart/abort', { method: 'POST', body: JSON.stringify(body) }).catch(() => {});
    return;
  }
  ui.progress.value = 100;
  ui.bytes.textContent = `${kib(recorded)} stored`;
  say('Upload complete');
  const watch = `/app/videos/${init.videoId}`;
  $('watch-link').href = watch;
  $('after').hidden = false;
  if (!user) {
    // Signing up from here comes back here, where the recording moves into the new account.
    rememberGuestRecording(init.videoId, init.guestToken);
    $('after-signup').href = signInHref('/app/record');
    $('guest-after').hidden = false;
  }
  ui.record.disabled = false;
  await showCaptions(init.videoId).catch((e) => {
    ui.captions.textContent = `Caption state unknown: ${e.message}`;
  });
}

async function showClaimed() {
  const { claimed, error } = await claimGuestRecordings();
  if (claimed.length > 0) {
    const links = claimed.map((v) => {
      const a = document.createElement('a');
      a.href = `/app/videos/${v.id}`;
      a.textContent = v.title;
      return a;
    });
    $('claimed-list').replaceChildren(...links.flatMap((a, i) => (i === 0 ? [a] : [', ', a])));
    $('claimed').hidden = false;
  }
  if (error) say(`A guest recording could not be moved into your videos: ${error.message}`, true);
}

async function main() {
  const user = await session();
  showAccount(user);
  if (user) {
    await showClaimed();
  } else {
    $('guest-note').hidden = false;
    $('library').hidden = true;
  }
  if (!navigator.mediaDevices?.getDisplayMedia || typeof MediaRecorder === 'undefined') {
    ui.record.disabled = true;
    say('This browser cannot record the screen.', true);
    return;
  }
  ui.record.addEventListener('click', () => {
    record(user).catch((e) => say(e.message, true));
  });
  document.body.dataset.ready = 'true';
}

main().catch((e) => say(e.message, true));
