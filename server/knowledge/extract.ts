// Text from uploaded files: plain text and Markdown as they are, HTML through a real parser into
// Markdown-style text that keeps the headings, PDF through pdf.js (unpdf's build runs in-process, with no
// worker and no network).
import { Parser } from 'htmlparser2';
import { ApiError } from '../errors.ts';

export type DocumentType = 'text/plain' | 'text/markdown' | 'text/html' | 'application/pdf';

export const SUPPORTED_TYPES: readonly DocumentType[] = ['text/plain', 'text/markdown', 'text/html', 'application/pdf'];

export interface Extracted {
  text: string;
  /** A title the file itself carries: an HTML <title> or first <h1>, a PDF's Title, a Markdown `# ` line. */
  title: string | undefined;
}

export interface FileInput {
  buffer: Buffer;
  /** The part's declared media type. */
  mimetype: string;
  filename: string;
}

const BY_MEDIA_TYPE: Record<string, DocumentType> = {
  'text/plain': 'text/plain',
  'text/markdown': 'text/markdown',
  'text/x-markdown': 'text/markdown',
  'text/html': 'text/html',
  'application/xhtml+xml': 'text/html',
  'application/pdf': 'application/pdf',
};

const BY_EXTENSION: Record<string, DocumentType> = {
  txt: 'text/plain',
  text: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  html: 'text/html',
  htm: 'text/html',
  xhtml: 'text/html',
  pdf: 'application/pdf',
};

// Media types that say nothing about the content, so the file name decides.
const GENERIC = new Set(['', 'application/octet-stream', 'binary/octet-stream', 'application/x-download']);

function isPdf(buffer: Buffer): boolean {
  // The header may follow a little junk; readers look in the first kilobyte.
  return buffer.subarray(0, 1024).includes('%PDF-');
}

function unsupported(message: string): ApiError {
  return new ApiError('unsupported_media_type', `${message} Supported: ${SUPPORTED_TYPES.join(', ')}.`, {
    details: [{ field: 'file', message }],
  });
}

/** The document type of an upload, from its bytes (PDF), its declared media type, or its extension. */
export function detectType(file: FileInput): DocumentType {
  if (isPdf(file.buffer)) return 'application/pdf';
  const declared = file.mimetype.split(';')[0]!.trim().toLowerCase();
  const extension = /\.([a-z0-9]+)$/i.exec(file.filename)?.[1]?.toLowerCase() ?? '';
  const type = GENERIC.has(declared) ? BY_EXTENSION[extension] : BY_MEDIA_TYPE[declared];
  if (!type) {
    throw unsupported(`Files of type ${declared || 'unknown'}${extension ? ` (.${extension})` : ''} are not supported.`);
  }
  if (type === 'application/pdf') throw unsupported('The file is declared as a PDF but is not one.');
  return type;
}

function decodeUtf8(buffer: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(buffer);
  } catch {
    throw unsupported('Text files must be UTF-8.');
  }
}

const SKIPPED = new Set(['head', 'script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'nav', 'button', 'select']);
const BLOCKS = new Set([
  'address', 'article', 'aside', 'blockquote', 'dd', 'details', 'dialog', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure',
  'footer', 'form', 'header', 'hr', 'main', 'ol', 'p', 'section', 'summary', 'table', 'tbody', 'thead', 'tfoot', 'tr', 'ul',
]);

/** How deep elements may nest in an uploaded HTML file; real pages stay far below it. */
export const MAX_HTML_DEPTH = 1024;

// Runs of whitespace as one space. Written so that a single space, the common case, is not a match: V8
// replacing millions of one-space matches in a large text takes seconds.
const squash = (text: string) => text.replace(/\s\s+|[^\S ]/g, ' ');

/**
 * HTML as Markdown-style text: headings as `#` lines, blocks as paragraphs, list items as `- ` lines.
 * Converted while the parser streams, with no tree and no recursion. The parser keeps its open
 * elements in a list it shifts at the front, which costs the square of the depth, so the conversion
 * stops with a 400 once elements nest past MAX_HTML_DEPTH, before that cost can matter.
 */
export function htmlToText(html: string): Extracted {
  const out: string[] = [];
  let depth = 0;
  let skipped = 0;
  let pre = 0;
  /** The heading being read (its level and text), written out whole when it closes. */
  let heading: { level: number; depth: number; text: string[] } | undefined;
  let title: string | undefined;
  let firstH1: string | undefined;
  let titleText: string[] | undefined;
  const tooDeep = new ApiError('invalid_request', `The HTML file nests elements more than ${MAX_HTML_DEPTH} levels deep.`, {
    details: [{ field: 'file', message: `nests elements more than ${MAX_HTML_DEPTH} levels deep` }],
  });
  const parser = new Parser({
    onopentag(name) {
      depth++;
      if (depth > MAX_HTML_DEPTH) throw tooDeep;
      if (name === 'title' && title === undefined && titleText === undefined) titleText = [];
      if (heading) return;
      if (skipped > 0 || SKIPPED.has(name)) {
        skipped++;
        return;
      }
      const level = /^h([1-6])$/.exec(name);
      if (level) heading = { level: Number(level[1]), depth, text: [] };
      else if (name === 'br') out.push('\n');
      else if (name === 'li') out.push('\n- ');
      else if (name === 'pre') {
        pre++;
        out.push('\n\n');
      } else if (BLOCKS.has(name)) out.push('\n\n');
    },
    ontext(data) {
      titleText?.push(data);
      if (heading) heading.text.push(data);
      else if (skipped === 0) out.push(pre > 0 ? data : squash(data));
    },
    onclosetag(name) {
      depth--;
      if (name === 'title' && titleText) {
        title = squash(titleText.join('')).trim();
        titleText = undefined;
      }
      if (heading) {
        if (depth >= heading.depth) return;
        const text = squash(heading.text.join('')).trim();
        if (heading.level === 1 && firstH1 === undefined) firstH1 = text;
        if (text) out.push(`\n\n${'#'.repeat(heading.level)} ${text}\n\n`);
        heading = undefined;
        return;
      }
      if (skipped > 0) {
        skipped--;
        return;
      }
      if (name === 'td' || name === 'th') out.push(' | ');
      else if (name === 'pre') {
        pre--;
        out.push('\n\n');
      } else if (BLOCKS.has(name)) out.push('\n\n');
    },
  });
  parser.end(html);
  const text = out
    .join('')
    .split('\n')
    // Squashed text leaves one space where a line break was; indentation inside <pre> is kept.
    .map((line) => line.trimEnd().replace(/^ (?=\S)/, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { text, title: title || firstH1 || undefined };
}

async function pdfToText(buffer: Buffer): Promise<Extracted> {
  // Loaded at the first PDF, not at start-up: most servers never extract one.
  const { extractText: extractPdfText, getDocumentProxy, getMeta } = await import('unpdf');
  let pdf;
  try {
    // verbosity 0: pdf.js would otherwise print its warnings about damaged files to the console.
    pdf = await getDocumentProxy(new Uint8Array(buffer), { verbosity: 0 });
  } catch (error) {
    const reason = error instanceof Error && error.name === 'PasswordException' ? 'it is encrypted with a password' : 'it is damaged or not a PDF';
    throw new ApiError('invalid_request', `The PDF cannot be read: ${reason}.`, { details: [{ field: 'file', message: reason }], cause: error });
  }
  try {
    const { text } = await extractPdfText(pdf, { mergePages: false });
    const { info } = await getMeta(pdf);
    const title = typeof info.Title === 'string' && info.Title.trim() ? info.Title.trim() : undefined;
    return { text: text.map((page) => page.trim()).join('\n\n'), title };
  } finally {
    await pdf.loadingTask.destroy();
  }
}

/**
 * The text of the first `# ` line, without trailing spaces and `#`s. Line by line and trimmed by hand: one
 * multi-line regular expression with a lazy title costs the square of a long line's length.
 */
export function markdownTitle(text: string): string | undefined {
  for (const line of text.split(/\r\n?|[\n\u2028\u2029]/)) {
    const opening = /^ {0,3}# +/.exec(line);
    if (!opening) continue;
    let end = line.length;
    while (end > opening[0].length && (line[end - 1] === ' ' || line[end - 1] === '#')) end--;
    return line.slice(opening[0].length, end).trim() || undefined;
  }
  return undefined;
}

/** The text of a document of `type`. */
export async function extractText(type: DocumentType, buffer: Buffer): Promise<Extracted> {
  switch (type) {
    case 'application/pdf':
      return pdfToText(buffer);
    case 'text/html':
      return htmlToText(decodeUtf8(buffer));
    case 'text/markdown': {
      const text = decodeUtf8(buffer);
      return { text, title: markdownTitle(text) };
    }
    case 'text/plain':
      return { text: decodeUtf8(buffer), title: undefined };
  }
}
