// Audio that a protocol carries by reference or inline, as the chat format takes it: base64 with a format.
import { ApiError } from '../errors.ts';
import type { OutboundPolicy } from '../net/outbound.ts';

const MAX_AUDIO_BYTES = 25 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 15_000;

type AudioFormat = 'wav' | 'mp3';

function formatOf(hint: string | null | undefined): AudioFormat | undefined {
  const value = (hint ?? '').toLowerCase().replace(/^audio\//, '').replace(/^x-/, '').replace(/;.*$/, '').trim();
  if (value === 'wav' || value === 'wave' || value === 'vnd.wave') return 'wav';
  if (value === 'mp3' || value === 'mpeg' || value === 'mpeg3') return 'mp3';
  return undefined;
}

function unsupported(what: string): ApiError {
  return new ApiError('invalid_request', `Audio must be WAV or MP3; this one is ${what || 'of an unknown format'}.`, { details: [{ field: 'input', message: 'unsupported audio format' }] });
}

/** Resolves AgentScope-style audio (`data`: a `data:` URL, an http(s) URL, or bare base64 with `format`). */
export function createAudioResolver(outbound: OutboundPolicy) {
  return async (data: string, format: string | null | undefined): Promise<{ data: string; format: AudioFormat }> => {
    const inline = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(data);
    if (inline) {
      const chosen = formatOf(inline[1]) ?? formatOf(format);
      if (!chosen) throw unsupported(inline[1] || (format ?? ''));
      const payload = inline[2] ? inline[3]! : Buffer.from(decodeURIComponent(inline[3]!), 'latin1').toString('base64');
      return { data: payload, format: chosen };
    }
    if (!/^https?:\/\//i.test(data)) {
      const chosen = formatOf(format);
      if (!chosen) throw unsupported(format ?? '');
      return { data, format: chosen };
    }
    let response: Response;
    try {
      response = await outbound.fetch(data, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause ?? error;
      throw new ApiError('invalid_request', `The audio at ${data} could not be fetched: ${(cause as Error).message}`, { details: [{ field: 'input', message: 'audio not fetched' }] });
    }
    if (!response.ok) {
      throw new ApiError('invalid_request', `The audio at ${data} could not be fetched: HTTP ${response.status}.`, { details: [{ field: 'input', message: 'audio not fetched' }] });
    }
    const chosen = formatOf(format) ?? formatOf(response.headers.get('content-type')) ?? formatOf(new URL(data).pathname.split('.').pop());
    if (!chosen) throw unsupported(response.headers.get('content-type') ?? '');
    const bytes = Buffer.from(await response.arrayBuffer());
    if (bytes.byteLength > MAX_AUDIO_BYTES) throw new ApiError('payload_too_large', `The audio at ${data} is larger than ${MAX_AUDIO_BYTES} bytes.`);
    return { data: bytes.toString('base64'), format: chosen };
  };
}
