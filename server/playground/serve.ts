// Serves the browser playground, bundled at build time into playground/dist/ (scripts/build-playground.ts),
// at /playground/. Static files only: the page talks to the API like any other client.
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler, type Router } from 'express';

export const playgroundRoot = fileURLToPath(new URL('../../playground/dist/', import.meta.url));

/**
 * Stricter than helmet's default for the rest of the app: nothing inline at all (the bundle sets no
 * style attributes; Preact's style properties go through the CSSOM, which CSP does not govern), and no
 * other origin. `upgrade-insecure-requests` is left out on purpose: a server reached over plain http on
 * a LAN address would otherwise send the browser to https for the page's own assets, and they would fail.
 */
export const playgroundCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader('Content-Security-Policy', playgroundCsp);
  // A browser that remembered an old bundle asks again; the files are small and answers are 304s.
  res.setHeader('Cache-Control', 'no-cache');
  next();
};

export function playground(root = playgroundRoot): Router {
  const router = express.Router({ strict: true });
  router.use(securityHeaders);
  // The page's asset URLs are relative, so it must be addressed as a folder.
  router.get('/', (req, res, next) => {
    if (req.originalUrl.split('?')[0]!.endsWith('/')) {
      next();
      return;
    }
    const query = req.originalUrl.slice(req.originalUrl.split('?')[0]!.length);
    res.redirect(301, `${req.baseUrl}/${query}`);
  });
  router.use(express.static(root, { index: 'index.html', redirect: false, fallthrough: true, dotfiles: 'ignore' }));
  return router;
}
