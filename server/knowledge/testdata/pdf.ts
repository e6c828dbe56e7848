// Real PDFs for the tests, made with pdf-lib rather than committed as opaque files.
import { PDFDocument, StandardFonts } from 'pdf-lib';

/** A PDF with one line of text per entry and one page per array. */
export async function makePdf(pages: string[][], title?: string): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  if (title) pdf.setTitle(title);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = pdf.addPage();
    lines.forEach((line, i) => page.drawText(line, { x: 50, y: 750 - i * 18, size: 12, font }));
  }
  return Buffer.from(await pdf.save());
}
