// Text from uploaded files: plain text and Markdown as they are, HTML through a real parser into
// Markdown-style text that keeps the headings, PDF through pdf.js (unpdf's build runs in-process, with no
// worker and no network).
import type { ChildNode, Element } from 'domhandler';
import { parseDocument } from 'htmlparser2';
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

function textContent(node: ChildNode): string {
  if (node.type === 'text') return node.data;
  if ('children' in node) return node.children.map(textContent).join('');
  return '';
}

function findFirst(nodes: ChildNode[], name: string): Element | undefined {
  for (const node of nodes) {
    if (node.type !== 'tag' && node.type !== 'script' && node.type !== 'style') continue;
    if (node.name === name) return node;
    const found = findFirst(node.children, name);
    if (found) return found;
  }
  return undefined;
}

const squash = (text: string) => text.replace(/\s+/g, ' ');

/** HTML as Markdown-style text: headings as `#` lines, blocks as paragraphs, list items as `- ` lines. */
export function htmlToText(html: string): Extracted {
  const document = parseDocument(html);
  const out: string[] = [];
  const breakBlock = () => out.push('\n\n');
  const walk = (nodes: ChildNode[], pre: boolean) => {
    for (const node of nodes) {
      if (node.type === 'text') {
        out.push(pre ? node.data : squash(node.data));
        continue;
      }
      if (node.type !== 'tag') continue;
      const name = node.name;
      if (SKIPPED.has(name)) continue;
      const heading = /^h([1-6])$/.exec(name);
      if (heading) {
        const title = squash(textContent(node)).trim();
        if (title) out.push(`\n\n${'#'.repeat(Number(heading[1]))} ${title}\n\n`);
      } else if (name === 'br') {
        out.push('\n');
      } else if (name === 'li') {
        out.push('\n- ');
        walk(node.children, pre);
      } else if (name === 'td' || name === 'th') {
        walk(node.children, pre);
        out.push(' | ');
      } else if (name === 'pre') {
        breakBlock();
        walk(node.children, true);
        breakBlock();
      } else if (BLOCKS.has(name)) {
        breakBlock();
        walk(node.children, pre);
        breakBlock();
      } else {
        walk(node.children, pre);
      }
    }
  };
  walk(document.children, false);
  const text = out
    .join('')
    .split('\n')
    // Squashed text leaves one space where a line break was; indentation inside <pre> is kept.
    .map((line) => line.replace(/\s+$/, '').replace(/^ (?=\S)/, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const titleNode = findFirst(document.children, 'title') ?? findFirst(document.children, 'h1');
  const title = titleNode ? squash(textContent(titleNode)).trim() : '';
  return { text, title: title || undefined };
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

export function markdownTitle(text: string): string | undefined {
  return /^ {0,3}# +(.+?)[ #]*$/m.exec(text)?.[1]?.trim() || undefined;
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
