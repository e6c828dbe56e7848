// Text shapes that made the document parsers cost the square of a line's length: a heading or a line
// with a long run of spaces (regular expressions that backtrack over it), and whitespace-heavy HTML.
// Each now takes one pass; before, these cases ran for minutes.
import { describe, expect, it } from 'vitest';
import { chunkText } from './chunk.ts';
import { htmlToText, markdownTitle } from './extract.ts';

const SPACES = ' '.repeat(200_000);

describe('document text parsers on hostile text', () => {
  it('reads a Markdown heading with a long run of spaces inside it', () => {
    const chunks = chunkText(`# a${SPACES}b ##\n\nBody text.`, { maxTokens: 200, overlapTokens: 0, headings: true });
    expect(chunks[0]!.headings[0] === `a${SPACES}b`).toBe(true);
    expect(markdownTitle(`# a${SPACES}b`) === `a${SPACES}b`).toBe(true);
    expect(markdownTitle(`text\n  # Title #${SPACES}#\n# second`)).toBe('Title');
  });

  it('converts HTML with long runs of text and spaces', () => {
    // Compared as booleans: a failing comparison of such strings would spend minutes on the diff.
    expect(htmlToText(`<pre>${SPACES}x${SPACES}y</pre>`).text === `x${SPACES}y`).toBe(true);
    const words = 'x '.repeat(1_000_000);
    expect(htmlToText(`<div>${words}</div>`).text === words.trim()).toBe(true);
  });
});
