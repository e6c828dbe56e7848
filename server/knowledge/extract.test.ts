import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.ts';
import { detectType, extractText, htmlToText } from './extract.ts';
import { makePdf } from './testdata/pdf.ts';

const file = (content: string | Buffer, mimetype: string, filename: string) => ({
  buffer: Buffer.isBuffer(content) ? content : Buffer.from(content),
  mimetype,
  filename,
});

function apiErrorOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('detectType', () => {
  it('takes the declared media type, ignoring parameters', () => {
    expect(detectType(file('x', 'text/plain; charset=utf-8', 'a.bin'))).toBe('text/plain');
    expect(detectType(file('x', 'text/x-markdown', 'a'))).toBe('text/markdown');
    expect(detectType(file('x', 'application/xhtml+xml', 'a'))).toBe('text/html');
  });

  it('falls back to the extension when the media type says nothing', () => {
    expect(detectType(file('x', 'application/octet-stream', 'notes.MD'))).toBe('text/markdown');
    expect(detectType(file('x', '', 'page.htm'))).toBe('text/html');
  });

  it('recognises a PDF by its bytes, whatever it is declared as', async () => {
    const pdf = await makePdf([['hello']]);
    expect(detectType(file(pdf, 'text/plain', 'x.txt'))).toBe('application/pdf');
    expect(detectType(file(pdf, 'application/octet-stream', 'x'))).toBe('application/pdf');
  });

  it('refuses other types, and a "PDF" that is not one, with 415', () => {
    for (const input of [file('x', 'image/png', 'a.png'), file('x', 'application/octet-stream', 'a.docx'), file('plain words', 'application/pdf', 'a.pdf')]) {
      const error = apiErrorOf(() => detectType(input));
      expect(error.status).toBe(415);
      expect(error.message).toContain('Supported: text/plain, text/markdown, text/html, application/pdf.');
    }
  });
});

describe('extractText', () => {
  it('turns HTML into text with its headings as Markdown headings, leaving out scripts, styles and navigation', () => {
    const { text, title } = htmlToText(`<!doctype html><html><head><title>Store &amp; policies</title><style>p{color:red}</style></head>
      <body><nav><a href="/">Home</a></nav><h1>Policies</h1><p>Read   these
      carefully.</p><h2>Returns</h2><p>Within <b>30&nbsp;days</b>.</p><ul><li>Receipt</li><li>Tags</li></ul>
      <script>alert("x")</script><pre>  indented
  code</pre><table><tr><td>a</td><td>b</td></tr></table></body></html>`);
    expect(title).toBe('Store & policies');
    expect(text).toBe('# Policies\n\nRead these carefully.\n\n## Returns\n\nWithin 30 days.\n\n- Receipt\n- Tags\n\n  indented\n  code\n\na | b |');
  });

  it('takes an HTML title from the first h1 when there is no <title>', () => {
    expect(htmlToText('<h1>Only heading</h1><p>x</p>').title).toBe('Only heading');
  });

  it('reads the text and title of a PDF, page by page', async () => {
    const pdf = await makePdf([['Tides and the moon', 'Spring tides come at full moon.'], ['Second page about neap tides.']], 'Tide tables');
    const { text, title } = await extractText('application/pdf', pdf);
    expect(title).toBe('Tide tables');
    expect(text).toBe('Tides and the moon\nSpring tides come at full moon.\n\nSecond page about neap tides.');
  });

  it('answers 400 for a damaged PDF', async () => {
    const error = await extractText('application/pdf', Buffer.from('%PDF-1.7\nthis is not really a pdf')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).message).toContain('The PDF cannot be read');
  });

  it('reads UTF-8 text (dropping a byte-order mark) and refuses other encodings with 415', async () => {
    expect(await extractText('text/markdown', Buffer.from('\uFEFF# Título\n\nÜber'))).toEqual({ text: '# Título\n\nÜber', title: 'Título' });
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]);
    const error = await extractText('text/plain', latin1).catch((e: unknown) => e);
    expect((error as ApiError).status).toBe(415);
  });
});
