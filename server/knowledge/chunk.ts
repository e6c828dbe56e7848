// Splits a document into chunks for embedding: first along headings (so a chunk never straddles two
// sections), then along paragraphs, packed up to a token budget, with the tail of each chunk repeated at
// the head of the next so a sentence cut at a boundary is still found whole. Each chunk's text starts
// with its heading path, which tells the embedder and the keyword index what the passage is about.

export interface ChunkOptions {
  /** Most tokens in one chunk, heading path included. */
  maxTokens: number;
  /** Tokens of a chunk's end repeated at the start of the next chunk of the same section. */
  overlapTokens: number;
  /** Whether `#` lines (and setext underlines) are headings: Markdown and converted HTML, not plain text or PDF. */
  headings: boolean;
}

export interface Chunk {
  text: string;
  /** The headings above the passage, outermost first. */
  headings: string[];
  tokens: number;
}

interface Section {
  headings: string[];
  paragraphs: string[];
}

// Words (capped, so a long unbroken string still counts as several tokens, as a subword tokenizer would
// see it) and single punctuation marks: close to what embedding models count.
const TOKEN = /[\p{L}\p{N}_]{1,16}|[^\s\p{L}\p{N}_]/gu;
const ATX_OPENING = /^ {0,3}(#{1,6})[ \t]/;

/**
 * An ATX heading (`## Title ##`): its level and title. The closing `#`s are cut by hand: one regular
 * expression for the whole line (a lazy title before optional closing marks) costs the square of the
 * line's length on a long line of spaces.
 */
function atxHeading(line: string): { level: number; title: string } | undefined {
  const opening = ATX_OPENING.exec(line);
  if (!opening) return undefined;
  let rest = line.slice(opening[0].length);
  let end = rest.length;
  while (end > 0 && (rest[end - 1] === ' ' || rest[end - 1] === '\t')) end--;
  rest = rest.slice(0, end);
  while (end > 0 && rest[end - 1] === '#') end--;
  if (end < rest.length && end > 0 && (rest[end - 1] === ' ' || rest[end - 1] === '\t')) rest = rest.slice(0, end);
  return { level: opening[1]!.length, title: rest.trim() };
}
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING_SEPARATOR = ' › ';

export function countTokens(text: string): number {
  return text.match(TOKEN)?.length ?? 0;
}

/** The character offsets where each token starts. */
function tokenStarts(text: string): number[] {
  return Array.from(text.matchAll(TOKEN), (match) => match.index);
}

function sections(text: string, headings: boolean): Section[] {
  const result: Section[] = [];
  let path: string[] = [];
  let current: Section = { headings: path, paragraphs: [] };
  let paragraph: string[] = [];
  let fence: string | undefined;

  const endParagraph = () => {
    const joined = paragraph.join('\n').trim();
    if (joined) current.paragraphs.push(joined);
    paragraph = [];
  };
  const startSection = (level: number, title: string) => {
    endParagraph();
    if (current.paragraphs.length > 0) result.push(current);
    path = [...path.slice(0, level - 1), title];
    current = { headings: path, paragraphs: [] };
  };

  for (const line of text.split('\n')) {
    const fenceMark = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      paragraph.push(line);
      if (fenceMark && fenceMark[0] === fence[0] && fenceMark.length >= fence.length) {
        fence = undefined;
        endParagraph();
      }
      continue;
    }
    if (fenceMark) {
      endParagraph();
      fence = fenceMark;
      paragraph.push(line);
      continue;
    }
    const atx = headings ? atxHeading(line) : undefined;
    if (atx) {
      startSection(atx.level, atx.title);
      continue;
    }
    if (headings && paragraph.length === 1 && /^ {0,3}(=+|-+)[ \t]*$/.test(line)) {
      const title = paragraph[0]!.trim();
      paragraph = [];
      startSection(line.trim().startsWith('=') ? 1 : 2, title);
      continue;
    }
    if (line.trim() === '') endParagraph();
    else paragraph.push(line);
  }
  endParagraph();
  if (current.paragraphs.length > 0) result.push(current);
  return result;
}

/** Cuts `text` into pieces of at most `limit` tokens: at sentence ends where it can, else between tokens. */
function pieces(text: string, limit: number): string[] {
  if (countTokens(text) <= limit) return [text];
  const out: string[] = [];
  let buffer = '';
  for (const sentence of text.split(/(?<=[.!?;:])\s+|\n+/)) {
    if (!sentence.trim()) continue;
    const joined = buffer ? `${buffer} ${sentence}` : sentence;
    if (countTokens(joined) <= limit) {
      buffer = joined;
      continue;
    }
    if (buffer) out.push(buffer);
    buffer = '';
    if (countTokens(sentence) <= limit) {
      buffer = sentence;
      continue;
    }
    const starts = tokenStarts(sentence);
    for (let i = 0; i < starts.length; i += limit) {
      const end = starts[i + limit] ?? sentence.length;
      out.push(sentence.slice(starts[i], end).trim());
    }
  }
  if (buffer) out.push(buffer);
  return out;
}

/** The last `count` tokens of `text`, from a token start. */
function tail(text: string, count: number): string {
  if (count <= 0) return '';
  const starts = tokenStarts(text);
  if (starts.length <= count) return text;
  return text.slice(starts[starts.length - count]).trim();
}

export function chunkText(text: string, options: ChunkOptions): Chunk[] {
  const chunks: Chunk[] = [];
  for (const section of sections(text.replace(/\r\n?/g, '\n'), options.headings)) {
    // A heading path may take at most half the budget; the passage needs the rest.
    let prefix = section.headings.join(HEADING_SEPARATOR);
    const half = Math.floor(options.maxTokens / 2);
    if (countTokens(prefix) > half) prefix = tail(prefix, half);
    const prefixTokens = countTokens(prefix);
    const budget = options.maxTokens - prefixTokens;
    const overlap = Math.min(options.overlapTokens, Math.floor(budget / 4));
    const pieceLimit = budget - overlap;

    let body = '';
    const emit = () => {
      if (!body) return;
      const textOf = prefix ? `${prefix}\n\n${body}` : body;
      chunks.push({ text: textOf, headings: section.headings, tokens: countTokens(textOf) });
    };
    for (const paragraph of section.paragraphs) {
      for (const piece of pieces(paragraph, pieceLimit)) {
        const joined = body ? `${body}\n\n${piece}` : piece;
        if (countTokens(joined) <= budget) {
          body = joined;
          continue;
        }
        emit();
        const carry = tail(body, overlap);
        body = carry ? `${carry}\n\n${piece}` : piece;
      }
    }
    emit();
  }
  return chunks;
}
